// heapdom-uikit.so: heapdom's framework module for uikit, the module
// docs/framework-tutorial.md writes step by step.
//
//   detect   libuikit is loaded (uk_the_app, uk_version) in a version whose
//            layouts this module was built with (uikit.h)
//   blocks   every slot of every widget pool is a block of its own: used
//            slots typed with their component's kind, free slots free, the
//            pool headers internal
//   analyze  a node for the application, one per window under it and one
//            per view under its window; each node gets uikit's own objects
//            (window, event queue, view, layout cache, child array,
//            components). What the application hangs off a view (its
//            model) is left alone: the dominator tree puts it under the
//            view that alone keeps it, or under the window or the
//            application when several views share it.
//
// The structs below are read into local copies with hd_fw_read(): the
// pointers inside a copy are the target's addresses, never dereferenced
// here, only read through hd_fw_read() again.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapdom_framework.h>

#include "uikit.h"

// Bounds of every walk: a corrupted process must not make us loop.
#define MAX_POOLS 4096
#define MAX_WINDOWS 1024
#define MAX_VIEWS 100000
#define MAX_CHILDREN 4096
#define MAX_SLOT_SIZE 4096
#define MAX_EVENTS 65536
#define MAX_LAYOUT 4096

// What detect found, kept for blocks and analyze (hd_fw_private).
struct uk_state {
	uint64_t the_app; // address of uk_the_app
	uint64_t pools;   // address of uk_pools
};

static uint64_t addr_of(const void *target_pointer)
{
	return (uint64_t)(uintptr_t)target_pointer;
}

// Errors we can do without: left out with a note or a warning. Running out
// of memory is not one of them.
static bool fatal(struct hd_error *err)
{
	return err && err->code == HD_ERROR_NO_MEMORY;
}

// ---------------------------------------------------------------- detect

// A global of libuikit. When the program's executable refers to it, the
// linker gives it a copy relocation: the live variable is the executable's
// copy and the library's own one is never used. So look in every module,
// the executable first (module hint NULL), as the dynamic linker does.
static struct hd_error *uk_global(struct hd_fw *fw, const char *name,
				  uint64_t *addr)
{
	uint64_t size;
	return hd_fw_symbol(fw, NULL, name, addr, &size);
}

static struct hd_error *uk_detect(struct hd_fw *fw, bool *detected)
{
	*detected = false;
	struct uk_state st;
	uint64_t version_addr, code, size;
	// A function is never copied: it says the library is loaded.
	struct hd_error *err =
		hd_fw_symbol(fw, "libuikit", "uk_app_create", &code, &size);
	if (!err)
		err = uk_global(fw, "uk_version", &version_addr);
	if (!err)
		err = uk_global(fw, "uk_the_app", &st.the_app);
	if (!err)
		err = uk_global(fw, "uk_pools", &st.pools);
	if (err) {
		if (fatal(err))
			return err;
		hd_fw_note(fw, "no libuikit: %s", err->message);
		hd_error_destroy(err);
		return NULL;
	}
	uint32_t version;
	err = hd_fw_read(fw, version_addr, &version, sizeof(version));
	if (err) {
		if (fatal(err))
			return err;
		hd_fw_note(fw, "cannot read uk_version: %s", err->message);
		hd_error_destroy(err);
		return NULL;
	}
	// The layouts below are uikit.h's: another version may differ.
	if (version != UK_VERSION) {
		hd_fw_note(fw, "libuikit %u.%u: this module knows %u.%u only",
			   version >> 8, version & 0xff, UK_VERSION >> 8,
			   UK_VERSION & 0xff);
		return NULL;
	}
	struct uk_state *priv = malloc(sizeof(*priv));
	if (!priv)
		return &hd_error_no_memory;
	*priv = st;
	*hd_fw_private(fw) = priv;
	hd_fw_note(fw, "libuikit %u.%u", version >> 8, version & 0xff);
	*detected = true;
	return NULL;
}

// ---------------------------------------------------------------- blocks

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case UK_BUTTON:
		return "uk_button";
	case UK_LABEL:
		return "uk_label";
	case UK_TEXT_FIELD:
		return "uk_text_field";
	}
	return NULL;
}

static struct hd_error *add_pool(struct hd_fw *fw, uint64_t addr,
				 const struct uk_pool *p)
{
	// A block that breaks heapdom's rules (outside the pool's chunk,
	// overlapping another) is refused with a warning, once all are in.
	struct hd_error *err = hd_fw_add_block(fw, addr, sizeof(*p),
					       HD_STATE_INTERNAL, "uk_pool");
	for (uint32_t i = 0; !err && i < p->nslots; i++) {
		uint64_t slot = addr + sizeof(*p) + (uint64_t)i * p->slot_size;
		struct uk_slot s;
		err = hd_fw_read(fw, slot, &s, sizeof(s));
		if (err) {
			if (fatal(err))
				return err;
			hd_error_destroy(err);
			err = NULL;
			hd_fw_warn(fw, slot, "unreadable widget pool slot");
			continue;
		}
		const char *type = kind_name(s.kind);
		if (addr_of(s.pool) != addr ||
		    (s.magic == UK_SLOT_USED && !type) ||
		    (s.magic != UK_SLOT_USED && s.magic != UK_SLOT_FREE)) {
			hd_fw_warn(fw, slot,
				   "widget pool slot with a bad header "
				   "(magic %#x, kind %u): left out",
				   s.magic, s.kind);
			continue;
		}
		if (s.magic == UK_SLOT_USED)
			err = hd_fw_add_block(fw, slot, p->slot_size,
					      HD_STATE_USED, type);
		else
			err = hd_fw_add_block(fw, slot, p->slot_size,
					      HD_STATE_FREE, NULL);
	}
	return err;
}

static bool pool_ok(struct hd_fw *fw, uint64_t addr, const struct uk_pool *p)
{
	if (p->magic == UK_POOL_MAGIC && p->slot_size % 16 == 0 &&
	    p->slot_size >= sizeof(struct uk_free_slot) &&
	    p->slot_size <= MAX_SLOT_SIZE && p->nslots > 0 &&
	    p->nslots <= UK_POOL_SLOTS)
		return true;
	hd_fw_warn(fw, addr,
		   "not a widget pool (magic %#x, %u slots of %u bytes): "
		   "the pools from here on are left out",
		   p->magic, p->nslots, p->slot_size);
	return false;
}

static struct hd_error *uk_blocks(struct hd_fw *fw)
{
	const struct uk_state *st = *hd_fw_private(fw);
	uint64_t addr;
	struct hd_error *err = hd_fw_read_u64(fw, st->pools, &addr);
	for (int n = 0; !err && addr; n++) {
		if (n == MAX_POOLS) {
			hd_fw_warn(fw, addr, "more than %d widget pools: the "
				   "rest are left out", MAX_POOLS);
			return NULL;
		}
		struct uk_pool p;
		err = hd_fw_read(fw, addr, &p, sizeof(p));
		if (err || !pool_ok(fw, addr, &p))
			break;
		err = add_pool(fw, addr, &p);
		addr = addr_of(p.next);
	}
	if (err && !fatal(err)) {
		hd_fw_warn(fw, err->has_address ? err->address : addr,
			   "cannot read the widget pools: %s", err->message);
		hd_error_destroy(err);
		err = NULL;
	}
	return err;
}

// --------------------------------------------------------------- analyze

// The vertex of the block that starts at addr and holds at least size
// bytes, or HD_DOM_NONE after a warning.
static uint32_t block_at(struct hd_fw *fw, uint64_t addr, uint64_t size,
			 const char *what)
{
	uint32_t v = hd_fw_vertex_at(fw, addr);
	struct hd_block b;
	if (v == HD_DOM_NONE || !hd_fw_vertex_block(fw, v, &b)) {
		hd_fw_warn(fw, addr, "%s is not in a heap block: left out",
			   what);
		return HD_DOM_NONE;
	}
	if (b.addr != addr || b.usable < size || b.state != HD_STATE_USED) {
		hd_fw_warn(fw, addr,
			   "%s is not a used block of at least %" PRIu64
			   " bytes: left out", what, size);
		return HD_DOM_NONE;
	}
	return v;
}

// Reads a framework object that starts with a magic word. false (after a
// warning) when it cannot be read or is not what we expect.
static bool read_object(struct hd_fw *fw, uint64_t addr, void *buf,
			size_t size, uint32_t magic, const char *what,
			struct hd_error **fatal_err)
{
	struct hd_error *err = hd_fw_read(fw, addr, buf, size);
	if (err) {
		if (fatal(err)) {
			*fatal_err = err;
			return false;
		}
		hd_fw_warn(fw, addr, "cannot read %s: %s", what, err->message);
		hd_error_destroy(err);
		return false;
	}
	uint32_t got;
	memcpy(&got, buf, sizeof(got));
	if (got != magic) {
		hd_fw_warn(fw, addr, "%s has a bad magic %#x: left out", what,
			   got);
		return false;
	}
	return true;
}

// Assigns v to node and names it as uikit knows it.
static struct hd_error *assign(struct hd_fw *fw, uint32_t node, uint32_t v,
			       const char *type)
{
	struct hd_error *err = hd_fw_assign(fw, node, v);
	if (!err && type)
		err = hd_fw_name(fw, v, type);
	return err;
}

// Reads an array of n target pointers at addr into a malloc'd copy;
// *ret is NULL (after a warning) when it cannot be read.
static struct hd_error *read_pointers(struct hd_fw *fw, uint64_t addr,
				      uint32_t n, uint64_t **ret)
{
	*ret = NULL;
	uint64_t *a = malloc((n ? n : 1) * sizeof(*a));
	if (!a)
		return &hd_error_no_memory;
	struct hd_error *err = hd_fw_read(fw, addr, a, n * sizeof(*a));
	if (err) {
		free(a);
		if (fatal(err))
			return err;
		hd_fw_warn(fw, addr, "cannot read %u pointers: %s", n,
			   err->message);
		hd_error_destroy(err);
		return NULL;
	}
	*ret = a;
	return NULL;
}

static struct hd_error *component(struct hd_fw *fw, uint32_t node,
				  uint64_t view, uint64_t addr)
{
	uint32_t v = hd_fw_vertex_at(fw, addr);
	struct hd_block b;
	if (hd_fw_vertex_subblock(fw, v) < 0 || !hd_fw_vertex_block(fw, v, &b) ||
	    b.addr != addr || b.state != HD_STATE_USED) {
		hd_fw_warn(fw, addr, "component is not a used widget pool "
			   "slot: left out");
		return NULL;
	}
	struct uk_text_field f; // big enough for every kind
	if (b.usable < sizeof(f.base)) {
		hd_fw_warn(fw, addr, "component in a %" PRIu64 "-byte slot: "
			   "left out", b.usable);
		return NULL;
	}
	size_t size = b.usable < sizeof(f) ? sizeof(f.base) : sizeof(f);
	struct hd_error *err = NULL;
	if (!read_object(fw, addr, &f, size, UK_SLOT_USED, "component", &err))
		return err;
	if (addr_of(f.base.view) != view) {
		hd_fw_warn(fw, addr, "component of another view: left out");
		return NULL;
	}
	err = hd_fw_assign(fw, node, v);
	// The caption stays unassigned: only the component keeps it alive.
	if (!err && f.base.text) {
		uint32_t t = block_at(fw, addr_of(f.base.text), 1, "caption");
		if (t != HD_DOM_NONE)
			err = hd_fw_name(fw, t, "uk_caption");
	}
	// A text field's edit buffer is uikit's, not the application's.
	if (!err && f.base.slot.kind == UK_TEXT_FIELD && size == sizeof(f) &&
	    f.buffer) {
		uint32_t t = block_at(fw, addr_of(f.buffer), f.capacity,
				      "text field buffer");
		if (t != HD_DOM_NONE)
			err = hd_fw_mark(fw, t, UINT64_MAX);
		if (!err && t != HD_DOM_NONE)
			err = hd_fw_name(fw, t, "uk_text_buffer");
	}
	return err;
}

// A stack of views still to visit, with the parent each must name.
struct view_stack {
	struct {
		uint64_t view, parent;
	} *e;
	size_t n, cap;
};

static bool push(struct view_stack *s, uint64_t view, uint64_t parent)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void *e = realloc(s->e, cap * sizeof(*s->e));
		if (!e)
			return false;
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n].view = view;
	s->e[s->n++].parent = parent;
	return true;
}

static struct hd_error *view_children(struct hd_fw *fw, uint32_t node,
				      uint64_t addr, const struct uk_view *view,
				      struct view_stack *stack)
{
	uint64_t children = addr_of(view->children);
	if (!children)
		return NULL;
	if (view->nchildren > view->cap_children ||
	    view->cap_children > MAX_CHILDREN) {
		hd_fw_warn(fw, addr, "view with %u children of %u: left out",
			   view->nchildren, view->cap_children);
		return NULL;
	}
	uint32_t v = block_at(fw, children, view->cap_children * 8ull,
			      "child view array");
	if (v == HD_DOM_NONE)
		return NULL;
	struct hd_error *err = assign(fw, node, v, "uk_view_children");
	uint64_t *a = NULL;
	if (!err)
		err = read_pointers(fw, children, view->nchildren, &a);
	for (uint32_t i = view->nchildren; !err && a && i-- > 0;)
		if (a[i] && !push(stack, a[i], addr))
			err = &hd_error_no_memory;
	free(a);
	return err;
}

static struct hd_error *view_layout(struct hd_fw *fw, uint32_t node,
				    uint64_t addr)
{
	struct uk_layout l;
	struct hd_error *err = hd_fw_read(fw, addr, &l, sizeof(l));
	if (err) {
		if (fatal(err))
			return err;
		hd_error_destroy(err);
		l.count = MAX_LAYOUT + 1;
	}
	if (l.count > MAX_LAYOUT) {
		hd_fw_warn(fw, addr, "unreadable layout cache: left out");
		return NULL;
	}
	uint32_t v = block_at(fw, addr, sizeof(l) +
				      l.count * sizeof(struct uk_rect),
			      "layout cache");
	return v == HD_DOM_NONE ? NULL : assign(fw, node, v, "uk_layout");
}

static struct hd_error *view(struct hd_fw *fw, uint32_t window_node,
			     uint64_t window, uint64_t addr, uint64_t parent,
			     struct view_stack *stack)
{
	uint32_t v = block_at(fw, addr, sizeof(struct uk_view), "view");
	struct uk_view view;
	struct hd_error *err = NULL;
	if (v == HD_DOM_NONE ||
	    !read_object(fw, addr, &view, sizeof(view), UK_VIEW_MAGIC, "view",
			 &err))
		return err;
	// A view is listed by its parent alone: this also keeps a corrupted
	// tree from leading us around a cycle.
	if (addr_of(view.window) != window || addr_of(view.parent) != parent) {
		hd_fw_warn(fw, addr, "view of another window or parent: "
			   "left out");
		return NULL;
	}
	view.name[sizeof(view.name) - 1] = '\0';
	char label[64];
	snprintf(label, sizeof(label), "view '%s'", view.name);
	uint32_t node;
	err = hd_fw_node(fw, window_node, HD_DOM_NONE, label, "view",
			 HD_OWNER_FRAMEWORK, &node);
	if (!err)
		err = assign(fw, node, v, "uk_view");
	if (!err)
		err = view_children(fw, node, addr, &view, stack);
	if (!err && view.layout)
		err = view_layout(fw, node, addr_of(view.layout));
	if (!err && view.ncomponents > UK_MAX_COMPONENTS) {
		hd_fw_warn(fw, addr, "view with %u components: they are "
			   "left out", view.ncomponents);
		return NULL;
	}
	for (uint32_t i = 0; !err && i < view.ncomponents; i++)
		if (view.components[i])
			err = component(fw, node, addr,
					addr_of(view.components[i]));
	return err;
}

static struct hd_error *event_queue(struct hd_fw *fw, uint32_t node,
				    uint64_t addr)
{
	struct uk_event_queue q;
	struct hd_error *err = NULL;
	if (!read_object(fw, addr, &q, sizeof(q), UK_QUEUE_MAGIC,
			 "event queue", &err))
		return err;
	if (q.capacity > MAX_EVENTS || q.count > q.capacity) {
		hd_fw_warn(fw, addr, "event queue of %u events of %u: left out",
			   q.count, q.capacity);
		return NULL;
	}
	uint32_t v = block_at(fw, addr, sizeof(q) + q.capacity *
					   sizeof(struct uk_event),
			      "event queue");
	return v == HD_DOM_NONE ? NULL : assign(fw, node, v, "uk_event_queue");
}

static struct hd_error *window(struct hd_fw *fw, uint32_t app_node,
			       uint64_t app, uint64_t addr)
{
	uint32_t v = block_at(fw, addr, sizeof(struct uk_window), "window");
	struct uk_window w;
	struct hd_error *err = NULL;
	if (v == HD_DOM_NONE ||
	    !read_object(fw, addr, &w, sizeof(w), UK_WINDOW_MAGIC, "window",
			 &err))
		return err;
	if (addr_of(w.app) != app) {
		hd_fw_warn(fw, addr, "window of another application: left out");
		return NULL;
	}
	w.title[sizeof(w.title) - 1] = '\0';
	char label[64];
	snprintf(label, sizeof(label), "window '%s'", w.title);
	uint32_t node;
	err = hd_fw_node(fw, app_node, HD_DOM_NONE, label, "window",
			 HD_OWNER_FRAMEWORK, &node);
	if (!err)
		err = assign(fw, node, v, "uk_window");
	if (!err && w.events)
		err = event_queue(fw, node, addr_of(w.events));

	struct view_stack stack = {0};
	if (!err && w.root && !push(&stack, addr_of(w.root), 0))
		err = &hd_error_no_memory;
	for (size_t visited = 0; !err && stack.n; visited++) {
		if (visited == MAX_VIEWS) {
			hd_fw_warn(fw, addr, "more than %d views: the rest "
				   "are left out", MAX_VIEWS);
			break;
		}
		stack.n--;
		err = view(fw, node, addr, stack.e[stack.n].view,
			   stack.e[stack.n].parent, &stack);
	}
	free(stack.e);
	return err;
}

// The malloc'd block of each widget pool keeps its header and the slack
// after its last slot: uikit's bookkeeping, named as such.
static struct hd_error *name_pools(struct hd_fw *fw)
{
	struct hd_error *err = NULL;
	for (size_t i = 0; i < hd_fw_num_subblocks(fw) && !err; i++) {
		struct hd_fw_subblock sb;
		if (!hd_fw_subblock(fw, i, &sb) || !sb.mine ||
		    sb.state != HD_STATE_INTERNAL)
			continue;
		// The header's address gives the block around it.
		uint32_t v = hd_fw_vertex_at(fw, sb.addr);
		err = hd_fw_name(fw, v, "uk_pool");
		if (!err)
			err = hd_fw_mark(fw, v, UINT64_MAX);
	}
	return err;
}

static struct hd_error *uk_analyze(struct hd_fw *fw)
{
	const struct uk_state *st = *hd_fw_private(fw);
	uint64_t addr;
	struct hd_error *err = name_pools(fw);
	if (err)
		return err;
	err = hd_fw_read_u64(fw, st->the_app, &addr);
	if (err) {
		if (fatal(err))
			return err;
		hd_fw_warn(fw, st->the_app, "cannot read uk_the_app: %s",
			   err->message);
		hd_error_destroy(err);
		return NULL;
	}
	if (!addr) // no application yet: nothing to show
		return NULL;
	uint32_t v = block_at(fw, addr, sizeof(struct uk_app), "uk_the_app");
	struct uk_app app;
	if (v == HD_DOM_NONE ||
	    !read_object(fw, addr, &app, sizeof(app), UK_APP_MAGIC,
			 "application", &err))
		return err;
	app.name[sizeof(app.name) - 1] = '\0';
	char label[64];
	snprintf(label, sizeof(label), "app '%s'", app.name);
	// The node hangs under the global that holds the application.
	uint32_t node;
	err = hd_fw_node(fw, HD_FW_NO_NODE, hd_fw_vertex_at(fw, st->the_app),
			 label, "app", HD_OWNER_FRAMEWORK, &node);
	if (!err)
		err = assign(fw, node, v, "uk_app");
	if (err)
		return err;
	if (app.nwindows > app.cap_windows || app.cap_windows > MAX_WINDOWS) {
		hd_fw_warn(fw, addr, "application with %u windows of %u: "
			   "they are left out", app.nwindows, app.cap_windows);
		return NULL;
	}
	uint64_t windows = addr_of(app.windows);
	uint32_t wv = block_at(fw, windows, app.cap_windows * 8ull,
			       "window array");
	if (wv == HD_DOM_NONE)
		return NULL;
	uint64_t *a = NULL;
	err = assign(fw, node, wv, "uk_windows");
	if (!err)
		err = read_pointers(fw, windows, app.nwindows, &a);
	for (uint32_t i = 0; !err && a && i < app.nwindows; i++)
		if (a[i])
			err = window(fw, node, addr, a[i]);
	free(a);
	return err;
}

static const struct hd_framework uikit_framework = {
	.abi = HD_FRAMEWORK_ABI,
	.name = "uikit",
	.version = "1.0",
	.description = "uikit example UI framework: app, windows, views, "
		       "widget pools",
	.detect = uk_detect,
	.blocks = uk_blocks,
	.analyze = uk_analyze,
};

HD_EXPORT const struct hd_framework *heapdom_framework_init(void)
{
	return &uikit_framework;
}

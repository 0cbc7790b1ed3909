// The ground truth of notes_app, for tests/frameworks/uikit/test_uikit.py.
//
// What heapdom's uikit module (uikit_module.c) must report is known by
// construction: the module makes a node for the application, one per
// window (under the application) and one per view (under its window), and
// assigns each node uikit's own objects; everything else a node keeps
// alive is what hangs off those objects alone (component captions, text
// field buffers) plus the application data notes_app declared with
// truth_own(). Sizes come from the blocks' own malloc headers.
//
// TRUTH FILE FORMAT (one record per line, fields separated by one space,
// ADDR = "0x" lowercase hex, integers decimal):
//
//   uikit-truth 1                 first line (format version)
//   pid PID
//   node IDX PARENT KIND OBJ_ALLOC OBJ_USED OBJ_BLOCKS BOUND_ALLOC
//        BOUND_USED BOUND_FRAMEWORK BOUND_APPLICATION BOUND_BLOCKS LABEL
//        a semantic node; IDX counts from 0 in this file; PARENT is the
//        IDX of its parent node or -1; LABEL (the rest of the line, may
//        hold spaces) as the module labels it. OBJ_* = the blocks assigned
//        to it (heap blocks: chunk and usable size; pool slots: the slot
//        size for both); BOUND_* = everything it keeps alive, child nodes
//        included; BOUND_FRAMEWORK = assigned blocks + text field buffers
//        (the module marks those), BOUND_APPLICATION = the rest.
//   object IDX ADDR               the struct node IDX stands for (uk_app,
//                                 uk_window, uk_view)
//   children IDX ADDR             the child array of view node IDX
//   expect ADDR IDX WHAT          the block at ADDR (application data shared
//                                 by several views) hangs directly under
//                                 node IDX in the semantic dominator tree
//   version ADDR                  where uk_version is (the live copy)
//   pool ADDR CHUNK SLOT_SIZE NSLOTS   a widget pool (ADDR = its malloc'd
//                                 chunk, also where its header is)
//   slot ADDR SIZE used|free KIND NODE   a slot of the pool before it;
//                                 KIND is uk_button, uk_label, uk_text_field
//                                 or -; NODE the IDX of the view node the
//                                 component belongs to, or - (free)
//   end NRECORDS                  last line; records before it, without
//                                 the first line
//
// Every address is formatted as text as soon as it is known and the stack
// is scrubbed afterwards: no stale copy of a pointer survives in the
// process to keep a block alive.
#include <malloc.h>

#include "notes_truth.h"
#include "uikit.h"

#define FIXTURE_NAME "notes_app"
#include "fixture_util.h"

#define MAX_OWN 32
#define MAX_EXPECT 8
#define MAX_NODES 64

// Sizes of the application's blocks, per node that keeps them alive.
static struct own {
	const char *window, *view; // string literals of notes_app
	uint64_t alloc, used, blocks;
} owns[MAX_OWN];
static size_t num_owns;

static struct expect {
	const char *window, *view, *what;
	char addr[24];
} expects[MAX_EXPECT];
static size_t num_expects;

// A node as the module must report it. Names are copies: nothing here
// points into the heap.
static struct tnode {
	const char *kind;
	char label[64];
	char window[40], view[24];
	char addr[24], children[24]; // as text
	int parent;
	uint64_t obj_alloc, obj_used, obj_blocks;
	uint64_t alloc, used, framework, blocks; // bound
} nodes[MAX_NODES];
static size_t num_nodes;

static char text[64 * 1024];

static int same(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static void hex(char *buf, size_t size, const void *p)
{
	struct obuf o = {buf, 0, size - 1, -1, 0};
	ohex(&o, (uintptr_t)p);
	buf[o.len] = '\0';
}

void truth_begin(void)
{
	num_owns = num_expects = num_nodes = 0;
}

void truth_own(const char *window, const char *view, const void *p)
{
	size_t i = 0;
	while (i < num_owns && !(same(owns[i].window, window) &&
				 same(owns[i].view, view)))
		i++;
	if (i == MAX_OWN)
		die("too many owners");
	if (i == num_owns) {
		owns[i].window = window;
		owns[i].view = view;
		num_owns++;
	}
	owns[i].alloc += csize(p);
	owns[i].used += malloc_usable_size((void *)p);
	owns[i].blocks++;
}

void truth_expect(const void *p, const char *window, const char *view,
		  const char *what)
{
	if (num_expects == MAX_EXPECT)
		die("too many expectations");
	struct expect *e = &expects[num_expects++];
	e->window = window;
	e->view = view;
	e->what = what;
	hex(e->addr, sizeof(e->addr), p);
}

// ------------------------------------------------------------ the nodes

static struct tnode *new_node(const char *kind, int parent,
			      const char *window, const char *view)
{
	if (num_nodes == MAX_NODES)
		die("too many nodes");
	struct tnode *n = &nodes[num_nodes++];
	n->kind = kind;
	n->parent = parent;
	strncpy(n->window, window ? window : "", sizeof(n->window) - 1);
	strncpy(n->view, view ? view : "", sizeof(n->view) - 1);
	return n;
}

// A heap block the module assigns to n.
static void assigned(struct tnode *n, const void *p)
{
	n->obj_alloc += csize(p);
	n->obj_used += malloc_usable_size((void *)p);
	n->obj_blocks++;
}

// A heap block only n keeps alive, not assigned; framework: the module
// marks it as the framework's.
static void kept(struct tnode *n, const void *p, int framework)
{
	n->alloc += csize(p);
	n->used += malloc_usable_size((void *)p);
	n->blocks++;
	if (framework)
		n->framework += csize(p);
}

static void label(struct tnode *n, const char *what, const char *name)
{
	size_t len = strlen(what);
	memcpy(n->label, what, len);
	n->label[len++] = ' ';
	n->label[len++] = '\'';
	size_t k = strlen(name);
	if (len + k + 2 > sizeof(n->label))
		die("label too long");
	memcpy(n->label + len, name, k);
	len += k;
	n->label[len++] = '\'';
	n->label[len] = '\0';
}

static void view_node(int window_node, struct uk_window *w, struct uk_view *v)
{
	struct tnode *n = new_node("view", window_node, w->title, v->name);
	label(n, "view", v->name);
	hex(n->addr, sizeof(n->addr), v);
	assigned(n, v);
	if (v->children) {
		hex(n->children, sizeof(n->children), v->children);
		assigned(n, v->children);
	}
	if (v->layout)
		assigned(n, v->layout);
	for (uint32_t i = 0; i < v->ncomponents; i++) {
		struct uk_component *c = v->components[i];
		n->obj_alloc += c->slot.pool->slot_size;
		n->obj_used += c->slot.pool->slot_size;
		n->obj_blocks++;
		if (c->text)
			kept(n, c->text, 0);
		if (c->slot.kind == UK_TEXT_FIELD)
			kept(n, ((struct uk_text_field *)c)->buffer, 1);
	}
}

static void window_node(struct uk_window *w)
{
	int idx = (int)num_nodes;
	struct tnode *n = new_node("window", 0, w->title, NULL);
	label(n, "window", w->title);
	hex(n->addr, sizeof(n->addr), w);
	assigned(n, w);
	assigned(n, w->events);
	// Depth first with an explicit stack, as uikit lays views out.
	struct uk_view *stack[64];
	size_t depth = 0;
	stack[depth++] = w->root;
	while (depth) {
		struct uk_view *v = stack[--depth];
		view_node(idx, w, v);
		for (uint32_t i = v->nchildren; i-- > 0;) {
			if (depth == 64)
				die("view tree too large");
			stack[depth++] = v->children[i];
		}
	}
}

static void build_nodes(void)
{
	struct uk_app *app = uk_the_app;
	struct tnode *n = new_node("app", -1, NULL, NULL);
	label(n, "app", app->name);
	hex(n->addr, sizeof(n->addr), app);
	assigned(n, app);
	assigned(n, app->windows);
	for (uint32_t i = 0; i < app->nwindows; i++)
		window_node(app->windows[i]);
}

static int find_node(const char *window, const char *view)
{
	for (size_t i = 0; i < num_nodes; i++)
		if (!strcmp(nodes[i].window, window ? window : "") &&
		    !strcmp(nodes[i].view, view ? view : ""))
			return (int)i;
	die("application data of a node that does not exist");
	return -1;
}

// Bound = what a node keeps itself + its child nodes' bounds. Children
// come after their parent in nodes[].
static void compute_bounds(void)
{
	for (size_t i = 0; i < num_owns; i++) {
		struct tnode *n = &nodes[find_node(owns[i].window, owns[i].view)];
		n->alloc += owns[i].alloc;
		n->used += owns[i].used;
		n->blocks += owns[i].blocks;
	}
	for (size_t i = 0; i < num_nodes; i++) {
		struct tnode *n = &nodes[i];
		n->alloc += n->obj_alloc;
		n->used += n->obj_used;
		n->blocks += n->obj_blocks;
		// The module's nodes are the framework's: all assigned bytes are.
		n->framework += n->obj_alloc;
	}
	for (size_t i = num_nodes; i-- > 1;) {
		struct tnode *n = &nodes[i], *p = &nodes[n->parent];
		p->alloc += n->alloc;
		p->used += n->used;
		p->framework += n->framework;
		p->blocks += n->blocks;
	}
}

// ------------------------------------------------------------ the file

static void onum(struct obuf *o, uint64_t v)
{
	ostr(o, " ");
	odec(o, v);
}

static void write_nodes(struct obuf *o)
{
	for (size_t i = 0; i < num_nodes; i++) {
		struct tnode *n = &nodes[i];
		ostr(o, "node ");
		odec(o, i);
		ostr(o, n->parent < 0 ? " -1" : " ");
		if (n->parent >= 0)
			odec(o, (uint64_t)n->parent);
		ostr(o, " ");
		ostr(o, n->kind);
		onum(o, n->obj_alloc);
		onum(o, n->obj_used);
		onum(o, n->obj_blocks);
		onum(o, n->alloc);
		onum(o, n->used);
		onum(o, n->framework);
		onum(o, n->alloc - n->framework);
		onum(o, n->blocks);
		ostr(o, " ");
		ostr(o, n->label);
		ostr(o, "\nobject ");
		odec(o, i);
		ostr(o, " ");
		ostr(o, n->addr);
		ostr(o, "\n");
		o->nrec += 2;
		if (n->children[0]) {
			ostr(o, "children ");
			odec(o, i);
			ostr(o, " ");
			ostr(o, n->children);
			ostr(o, "\n");
			o->nrec++;
		}
	}
	for (size_t i = 0; i < num_expects; i++) {
		ostr(o, "expect ");
		ostr(o, expects[i].addr);
		ostr(o, " ");
		odec(o, (uint64_t)find_node(expects[i].window, expects[i].view));
		ostr(o, " ");
		ostr(o, expects[i].what);
		ostr(o, "\n");
		o->nrec++;
	}
}

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
	return "-";
}

static void write_pools(struct obuf *o)
{
	for (struct uk_pool *p = uk_pools; p; p = p->next) {
		ostr(o, "pool ");
		ohex(o, (uintptr_t)p);
		onum(o, csize(p));
		onum(o, p->slot_size);
		onum(o, p->nslots);
		ostr(o, "\n");
		o->nrec++;
		for (uint32_t i = 0; i < p->nslots; i++) {
			struct uk_slot *s = (struct uk_slot *)((char *)(p + 1) +
							      (size_t)i * p->slot_size);
			int used = s->magic == UK_SLOT_USED;
			ostr(o, "slot ");
			ohex(o, (uintptr_t)s);
			onum(o, p->slot_size);
			ostr(o, used ? " used " : " free ");
			ostr(o, used ? kind_name(s->kind) : "-");
			if (used) {
				struct uk_view *v = ((struct uk_component *)s)->view;
				onum(o, (uint64_t)find_node(v->window->title, v->name));
			} else {
				ostr(o, " -");
			}
			ostr(o, "\n");
			o->nrec++;
		}
	}
}

__attribute__((noinline)) static void write_truth(const char *path)
{
	build_nodes();
	compute_bounds();
	struct obuf o = {text, 0, sizeof(text), -1, 0};
	otruth_open(&o, path);
	ostr(&o, "uikit-truth 1\npid ");
	odec(&o, (uintptr_t)getpid());
	ostr(&o, "\n");
	o.nrec++;
	write_nodes(&o);
	ostr(&o, "version ");
	ohex(&o, (uintptr_t)&uk_version);
	ostr(&o, "\n");
	o.nrec++;
	write_pools(&o);
	otruth_close(&o);
	vclear(text, sizeof(text));
}

void truth_finish(const char *path)
{
	scrub();
	write_truth(path);
	scrub();
}

void truth_ready(const char *ready)
{
	write_ready(ready);
	scrub();
}

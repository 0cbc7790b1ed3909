// uikit: the framework. See uikit.h for the objects and how they hang
// together.
#include <stdlib.h>
#include <string.h>

#include "uikit.h"

_Static_assert(sizeof(struct uk_pool) % 16 == 0,
	       "slots must start 16-byte aligned");

// Not const: gdb's gcore leaves a shared library's read-only pages out of
// the core, and tools reading a core look for the version here.
uint32_t uk_version = UK_VERSION;
struct uk_app *uk_the_app;
struct uk_pool *uk_pools;

static void copy_name(char *dst, size_t size, const char *src)
{
	strncpy(dst, src, size - 1);
	dst[size - 1] = '\0';
}

static char *dup_text(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

// ----------------------------------------------------------- widget pool

static size_t slot_size_of(size_t object_size)
{
	return (object_size + 15) & ~(size_t)15;
}

static struct uk_free_slot *pool_slot(struct uk_pool *p, uint32_t i)
{
	return (struct uk_free_slot *)((char *)(p + 1) +
				       (size_t)i * p->slot_size);
}

static struct uk_pool *pool_create(size_t slot_size)
{
	struct uk_pool *p = malloc(sizeof(*p) + UK_POOL_SLOTS * slot_size);
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p) + UK_POOL_SLOTS * slot_size);
	p->magic = UK_POOL_MAGIC;
	p->slot_size = (uint32_t)slot_size;
	p->nslots = UK_POOL_SLOTS;
	p->nfree = UK_POOL_SLOTS;
	// Free list in address order: slot 0 is handed out first.
	for (uint32_t i = UK_POOL_SLOTS; i-- > 0;) {
		struct uk_free_slot *s = pool_slot(p, i);
		s->slot.magic = UK_SLOT_FREE;
		s->slot.pool = p;
		s->next = p->free_list;
		p->free_list = s;
	}
	// New pools go to the end of the list, so older pools fill first.
	struct uk_pool **pp = &uk_pools;
	while (*pp)
		pp = &(*pp)->next;
	*pp = p;
	return p;
}

// A zeroed slot of slot_size bytes for an object of kind.
static void *pool_alloc(size_t object_size, enum uk_kind kind)
{
	size_t size = slot_size_of(object_size);
	struct uk_pool *p = uk_pools;
	while (p && (p->slot_size != size || !p->free_list))
		p = p->next;
	if (!p && !(p = pool_create(size)))
		return NULL;
	struct uk_free_slot *s = p->free_list;
	p->free_list = s->next;
	p->nfree--;
	memset(s, 0, size);
	s->slot.magic = UK_SLOT_USED;
	s->slot.kind = kind;
	s->slot.pool = p;
	return s;
}

static void pool_free(struct uk_slot *slot)
{
	struct uk_pool *p = slot->pool;
	struct uk_free_slot *s = (struct uk_free_slot *)slot;
	// Nothing of the old object may survive in a free slot.
	memset(s, 0, p->slot_size);
	s->slot.magic = UK_SLOT_FREE;
	s->slot.pool = p;
	s->next = p->free_list;
	p->free_list = s;
	p->nfree++;
}

// ------------------------------------------------------------------- app

struct uk_app *uk_app_create(const char *name)
{
	struct uk_app *app = calloc(1, sizeof(*app));
	if (!app)
		return NULL;
	app->windows = calloc(4, sizeof(*app->windows));
	if (!app->windows) {
		free(app);
		return NULL;
	}
	app->magic = UK_APP_MAGIC;
	app->cap_windows = 4;
	copy_name(app->name, sizeof(app->name), name);
	uk_the_app = app;
	return app;
}

static struct uk_view *view_alloc(struct uk_window *w, const char *name)
{
	struct uk_view *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->magic = UK_VIEW_MAGIC;
	v->window = w;
	copy_name(v->name, sizeof(v->name), name);
	return v;
}

struct uk_window *uk_window_create(struct uk_app *app, const char *title)
{
	if (app->nwindows == app->cap_windows) {
		uint32_t cap = app->cap_windows * 2;
		struct uk_window **a =
			realloc(app->windows, cap * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + app->cap_windows, 0,
		       (cap - app->cap_windows) * sizeof(*a));
		app->windows = a;
		app->cap_windows = cap;
	}
	struct uk_window *w = calloc(1, sizeof(*w));
	struct uk_event_queue *q = calloc(1, sizeof(*q) + UK_QUEUE_EVENTS *
						      sizeof(struct uk_event));
	struct uk_view *root = view_alloc(w, "root");
	if (!w || !q || !root) {
		free(w);
		free(q);
		free(root);
		return NULL;
	}
	q->magic = UK_QUEUE_MAGIC;
	q->capacity = UK_QUEUE_EVENTS;
	w->magic = UK_WINDOW_MAGIC;
	copy_name(w->title, sizeof(w->title), title);
	w->app = app;
	w->events = q;
	w->root = root;
	root->window = w;
	w->nviews = 1;
	app->windows[app->nwindows++] = w;
	return w;
}

struct uk_view *uk_view_create(struct uk_view *parent, const char *name)
{
	if (parent->nchildren == parent->cap_children) {
		uint32_t cap = parent->cap_children ? parent->cap_children * 2 : 4;
		struct uk_view **a =
			realloc(parent->children, cap * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + parent->cap_children, 0,
		       (cap - parent->cap_children) * sizeof(*a));
		parent->children = a;
		parent->cap_children = cap;
	}
	struct uk_view *v = view_alloc(parent->window, name);
	if (!v)
		return NULL;
	v->parent = parent;
	parent->children[parent->nchildren++] = v;
	parent->window->nviews++;
	return v;
}

void uk_view_set_model(struct uk_view *v, void *model)
{
	v->model = model;
}

// ------------------------------------------------------------ components

static int attach(struct uk_view *v, struct uk_component *c)
{
	if (v->ncomponents == UK_MAX_COMPONENTS)
		return -1;
	c->view = v;
	v->components[v->ncomponents++] = c;
	return 0;
}

static struct uk_component *component_create(struct uk_view *v,
					     size_t size, enum uk_kind kind,
					     const char *text)
{
	if (v->ncomponents == UK_MAX_COMPONENTS)
		return NULL;
	struct uk_component *c = pool_alloc(size, kind);
	if (!c)
		return NULL;
	if (text && !(c->text = dup_text(text))) {
		pool_free(&c->slot);
		return NULL;
	}
	attach(v, c);
	return c;
}

struct uk_component *uk_button_create(struct uk_view *v, const char *caption,
				      uk_click_fn on_click)
{
	struct uk_component *c =
		component_create(v, sizeof(*c), UK_BUTTON, caption);
	if (c)
		c->on_click = on_click;
	return c;
}

struct uk_component *uk_label_create(struct uk_view *v, const char *text)
{
	return component_create(v, sizeof(struct uk_component), UK_LABEL,
				text);
}

struct uk_text_field *uk_text_field_create(struct uk_view *v,
					   const char *placeholder,
					   uint32_t capacity)
{
	char *buf = calloc(1, capacity);
	if (!buf)
		return NULL;
	struct uk_text_field *f = (struct uk_text_field *)component_create(
		v, sizeof(*f), UK_TEXT_FIELD, NULL);
	if (!f) {
		free(buf);
		return NULL;
	}
	f->buffer = buf;
	f->capacity = capacity;
	copy_name(f->placeholder, sizeof(f->placeholder), placeholder);
	return f;
}

void uk_component_destroy(struct uk_component *c)
{
	struct uk_view *v = c->view;
	for (uint32_t i = 0; i < v->ncomponents; i++) {
		if (v->components[i] != c)
			continue;
		memmove(&v->components[i], &v->components[i + 1],
			(v->ncomponents - i - 1) * sizeof(v->components[0]));
		v->components[--v->ncomponents] = NULL;
		break;
	}
	free(c->text);
	if (c->slot.kind == UK_TEXT_FIELD)
		free(((struct uk_text_field *)c)->buffer);
	pool_free(&c->slot);
}

// ---------------------------------------------------------------- layout

static int view_layout(struct uk_view *v, int32_t y0)
{
	struct uk_layout *l = malloc(sizeof(*l) + v->ncomponents *
						  sizeof(struct uk_rect));
	if (!l)
		return -1;
	l->count = v->ncomponents;
	l->generation = v->layout ? v->layout->generation + 1 : 1;
	for (uint32_t i = 0; i < v->ncomponents; i++) {
		struct uk_rect r = {8, y0 + 24 * (int32_t)i, 200, 20};
		l->rects[i] = r;
		v->components[i]->x = r.x;
		v->components[i]->y = r.y;
		v->components[i]->w = r.w;
		v->components[i]->h = r.h;
	}
	free(v->layout);
	v->layout = l;
	return 0;
}

int uk_window_layout(struct uk_window *w)
{
	// Depth first with an explicit stack: a view tree can be deep.
	struct uk_view **stack = malloc(w->nviews * sizeof(*stack));
	if (!stack)
		return -1;
	uint32_t n = 0;
	int32_t y = 0;
	int ret = 0;
	stack[n++] = w->root;
	while (n && ret == 0) {
		struct uk_view *v = stack[--n];
		ret = view_layout(v, y);
		y += 24 * (int32_t)v->ncomponents;
		for (uint32_t i = v->nchildren; i-- > 0 && n < w->nviews;)
			stack[n++] = v->children[i];
	}
	free(stack);
	return ret;
}

int uk_post_event(struct uk_window *w, uint32_t type,
		  struct uk_component *target, int32_t x, int32_t y)
{
	struct uk_event_queue *q = w->events;
	if (q->count == q->capacity)
		return -1;
	struct uk_event *e = &q->events[(q->head + q->count++) % q->capacity];
	e->type = type;
	e->target = target;
	e->x = x;
	e->y = y;
	return 0;
}

// uikit — a tiny UI-style framework, the running example of
// docs/framework-tutorial.md.
//
// An application (struct uk_app, reachable from the global uk_the_app) has
// windows; a window has a title, a tree of views and an event queue; a view
// has a layout cache, an array of child views and up to UK_MAX_COMPONENTS
// components (buttons, labels, text fields), plus a model pointer for the
// application's own data. Components come from a widget pool: fixed-size
// slots carved out of one malloc'd chunk per pool, the pools chained from
// the global uk_pools.
//
// Nothing here draws anything: it is the memory layout of a UI framework,
// which is all a heap analyzer sees.
#ifndef UIKIT_H
#define UIKIT_H

#include <stddef.h>
#include <stdint.h>

#define UK_API __attribute__((visibility("default")))

// Major << 8 | minor. Tools that read uikit's memory check it.
#define UK_VERSION 0x0100

// Every framework struct starts with a magic word, so a tool reading a
// process's memory can tell a uikit object from garbage.
#define UK_APP_MAGIC 0x55504b41u    // "AKPU"
#define UK_WINDOW_MAGIC 0x55574b41u
#define UK_VIEW_MAGIC 0x55564b41u
#define UK_QUEUE_MAGIC 0x55514b41u
#define UK_POOL_MAGIC 0x55504f4fu
#define UK_SLOT_USED 0x55534c55u
#define UK_SLOT_FREE 0x55534c46u

#define UK_POOL_SLOTS 8
#define UK_MAX_COMPONENTS 8
#define UK_QUEUE_EVENTS 16

enum uk_kind {
	UK_BUTTON = 1,
	UK_LABEL = 2,
	UK_TEXT_FIELD = 3,
};

// ----------------------------------------------------------- widget pool

struct uk_pool;

// The header of every slot of a pool.
struct uk_slot {
	uint32_t magic;        // UK_SLOT_USED or UK_SLOT_FREE
	uint32_t kind;         // enum uk_kind, 0 when free
	struct uk_pool *pool;  // the pool the slot belongs to
};

// A free slot links to the next free slot of its pool.
struct uk_free_slot {
	struct uk_slot slot;
	struct uk_free_slot *next;
};

// One malloc'd chunk: this header, then nslots slots of slot_size bytes.
struct uk_pool {
	uint32_t magic;        // UK_POOL_MAGIC
	uint32_t slot_size;    // a multiple of 16
	uint32_t nslots;       // UK_POOL_SLOTS
	uint32_t nfree;
	struct uk_pool *next;  // the next pool in uk_pools
	struct uk_free_slot *free_list;
};

// ------------------------------------------------------------ components

struct uk_view;
struct uk_component;
typedef void (*uk_click_fn)(struct uk_component *c, void *arg);

// Buttons and labels: a 64-byte slot.
struct uk_component {
	struct uk_slot slot;
	struct uk_view *view;  // the view it is in
	int32_t x, y, w, h;
	char *text;            // the caption: a malloc'd copy, or NULL
	uk_click_fn on_click;  // buttons only
};

// Text fields: a 96-byte slot and an edit buffer of their own.
struct uk_text_field {
	struct uk_component base;
	char *buffer;          // capacity bytes, malloc'd by the framework
	uint32_t len, capacity;
	uint32_t cursor, selection;
	char placeholder[16];
};

// ----------------------------------------------------- windows and views

struct uk_rect {
	int32_t x, y, w, h;
};

// The layout cache of a view: one rectangle per component.
struct uk_layout {
	uint32_t count;
	uint32_t generation;
	struct uk_rect rects[];
};

struct uk_view {
	uint32_t magic;        // UK_VIEW_MAGIC
	uint32_t nchildren, cap_children;
	uint32_t ncomponents;
	char name[24];
	struct uk_window *window;
	struct uk_view *parent;    // NULL for the window's root view
	struct uk_view **children; // malloc'd, cap_children entries, or NULL
	struct uk_layout *layout;  // NULL until the first layout
	struct uk_component *components[UK_MAX_COMPONENTS];
	void *model;               // the application's data; uikit never
				   // looks inside it
};

struct uk_event {
	uint32_t type;
	int32_t x, y;
	struct uk_component *target;
};

// A ring of capacity events.
struct uk_event_queue {
	uint32_t magic;        // UK_QUEUE_MAGIC
	uint32_t head, count, capacity;
	struct uk_event events[];
};

struct uk_window {
	uint32_t magic;        // UK_WINDOW_MAGIC
	uint32_t nviews;       // views in the tree under root
	char title[40];
	struct uk_app *app;
	struct uk_view *root;
	struct uk_event_queue *events;
};

struct uk_app {
	uint32_t magic;        // UK_APP_MAGIC
	uint32_t nwindows, cap_windows;
	char name[20];
	struct uk_window **windows; // malloc'd, cap_windows entries
};

enum uk_event_type {
	UK_EVENT_CLICK = 1,
	UK_EVENT_KEY = 2,
	UK_EVENT_RESIZE = 3,
};

// ------------------------------------------------------------------- API

UK_API extern uint32_t uk_version; // UK_VERSION of the library loaded
UK_API extern struct uk_app *uk_the_app;
UK_API extern struct uk_pool *uk_pools;

// Each returns NULL when memory runs out.
UK_API struct uk_app *uk_app_create(const char *name);
// A window with an empty root view named "root".
UK_API struct uk_window *uk_window_create(struct uk_app *app,
					  const char *title);
UK_API struct uk_view *uk_view_create(struct uk_view *parent,
				      const char *name);
UK_API void uk_view_set_model(struct uk_view *v, void *model);

UK_API struct uk_component *uk_button_create(struct uk_view *v,
					     const char *caption,
					     uk_click_fn on_click);
UK_API struct uk_component *uk_label_create(struct uk_view *v,
					    const char *text);
UK_API struct uk_text_field *uk_text_field_create(struct uk_view *v,
						  const char *placeholder,
						  uint32_t capacity);
// Takes c out of its view and gives its slot back to the pool.
UK_API void uk_component_destroy(struct uk_component *c);

// Recomputes the layout cache of every view of w; 0 on success.
UK_API int uk_window_layout(struct uk_window *w);
// Queues an event; 0 on success, -1 when the queue is full.
UK_API int uk_post_event(struct uk_window *w, uint32_t type,
			 struct uk_component *target, int32_t x, int32_t y);

#endif

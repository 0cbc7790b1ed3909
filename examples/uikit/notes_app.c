// notes_app — a small notes application built on uikit, to look at with
// heapdom's uikit module (docs/framework-tutorial.md).
//
// Usage: notes_app                      build the scene, print a summary
//        notes_app --truth FILE [--wait READY]
//
// The scene: three windows. "Notes" shows a sidebar of note titles, an
// editor with a preview under it, and a toolbar; "Search" a query field
// and a list of results; "Settings" a few options. The application hangs
// its own data off the views' model pointers:
//   - each window's root view keeps that window's undo history;
//   - the note store (notes, their titles and bodies) is the model of both
//     the sidebar of "Notes" and the results of "Search": two windows
//     share it, so only the application as a whole keeps it alive;
//   - a glyph cache is shared by the editor and the preview of "Notes":
//     the window keeps it alive, neither view alone;
//   - the editor's draft and the settings are each one view's alone.
// A few components are destroyed again, so the widget pools have free
// slots.
//
// With --truth (tests/frameworks/uikit) the program writes what heapdom
// should report to FILE (notes_truth.c), calls hd_fixture_stop() — the
// test breaks there with gdb and takes a core — and with --wait then
// writes READY and sleeps so a live analysis can attach. Nothing but uikit
// keeps a pointer to the scene: the application's globals and stack hold
// none when it stops.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "notes_truth.h"
#include "uikit.h"

struct note {
	uint32_t id;
	char *title;
	char *body;
};

// The model shared by two windows.
struct note_store {
	uint32_t count;
	struct note *notes[8];
};

struct undo_history {
	uint32_t count;
	char *steps[8];
};

struct glyph_cache {
	uint32_t glyphs;
	unsigned char *atlas;
};

struct editor_model {
	struct glyph_cache *cache;
	char *draft;
	uint32_t note; // index into the store, not a pointer
};

struct preview_model {
	struct glyph_cache *cache;
	uint32_t zoom;
};

struct settings {
	char *font;
	uint32_t size;
};

static void fail(const char *what)
{
	fprintf(stderr, "notes_app: %s\n", what);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n);
	if (!p)
		fail("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = xmalloc(strlen(s) + 1);
	strcpy(p, s);
	return p;
}

#define CHECK(x) ((x) ? (void)0 : fail("uikit call failed: " #x))

static void on_click(struct uk_component *c, void *arg)
{
	(void)c;
	(void)arg;
}

// The application's data: truth_own() records which node alone keeps a
// block alive (view, window or, with both NULL, the application).
static struct undo_history *undo_history(const char *window, int steps)
{
	struct undo_history *u = xmalloc(sizeof(*u));
	truth_own(window, "root", u);
	for (int i = 0; i < steps; i++) {
		char text[48];
		snprintf(text, sizeof(text), "%s: step %d", window, i + 1);
		u->steps[u->count++] = xstrdup(text);
		truth_own(window, "root", u->steps[i]);
	}
	return u;
}

static struct note_store *note_store(void)
{
	static const char *const titles[] = {"Groceries", "Meeting notes",
					     "Ideas"};
	struct note_store *s = xmalloc(sizeof(*s));
	truth_own(NULL, NULL, s);
	truth_expect(s, NULL, NULL, "note_store");
	for (uint32_t i = 0; i < 3; i++) {
		struct note *n = xmalloc(sizeof(*n));
		n->id = i + 1;
		n->title = xstrdup(titles[i]);
		n->body = xmalloc(200 + 150 * i);
		snprintf(n->body, 200, "Body of note %u.", i + 1);
		s->notes[s->count++] = n;
		truth_own(NULL, NULL, n);
		truth_own(NULL, NULL, n->title);
		truth_own(NULL, NULL, n->body);
	}
	return s;
}

static struct glyph_cache *glyph_cache(const char *window)
{
	struct glyph_cache *c = xmalloc(sizeof(*c));
	c->glyphs = 96;
	c->atlas = xmalloc(1536);
	truth_own(window, NULL, c);
	truth_own(window, NULL, c->atlas);
	truth_expect(c, window, NULL, "glyph_cache");
	return c;
}

static void notes_window(struct uk_app *app, struct note_store *store)
{
	struct uk_window *w = uk_window_create(app, "Notes");
	CHECK(w);
	uk_view_set_model(w->root, undo_history("Notes", 3));

	struct uk_view *sidebar = uk_view_create(w->root, "sidebar");
	CHECK(sidebar);
	uk_view_set_model(sidebar, store);
	for (uint32_t i = 0; i < store->count; i++)
		CHECK(uk_label_create(sidebar, store->notes[i]->title));

	struct glyph_cache *cache = glyph_cache("Notes");
	struct uk_view *editor = uk_view_create(w->root, "editor");
	CHECK(editor);
	struct editor_model *em = xmalloc(sizeof(*em));
	em->cache = cache;
	em->draft = xstrdup("Milk, eggs, coffee, and something for dinner");
	truth_own("Notes", "editor", em);
	truth_own("Notes", "editor", em->draft);
	uk_view_set_model(editor, em);
	struct uk_text_field *body = uk_text_field_create(editor, "Type here", 256);
	CHECK(body);
	CHECK(uk_label_create(editor, "Saved"));

	struct uk_view *preview = uk_view_create(editor, "preview");
	CHECK(preview);
	struct preview_model *pm = xmalloc(sizeof(*pm));
	pm->cache = cache;
	pm->zoom = 100;
	truth_own("Notes", "preview", pm);
	uk_view_set_model(preview, pm);
	CHECK(uk_label_create(preview, "Preview"));

	struct uk_view *toolbar = uk_view_create(w->root, "toolbar");
	CHECK(toolbar);
	CHECK(uk_button_create(toolbar, "New", on_click));
	CHECK(uk_button_create(toolbar, "Delete", on_click));
	struct uk_component *save = uk_button_create(toolbar, "Save", on_click);
	CHECK(save);
	struct uk_component *share = uk_button_create(toolbar, "Share", on_click);
	CHECK(share);
	uk_component_destroy(share);

	CHECK(uk_window_layout(w) == 0);
	CHECK(uk_post_event(w, UK_EVENT_CLICK, save, 10, 12) == 0);
	CHECK(uk_post_event(w, UK_EVENT_KEY, &body->base, 'x', 0) == 0);
}

static void search_window(struct uk_app *app, struct note_store *store)
{
	struct uk_window *w = uk_window_create(app, "Search");
	CHECK(w);
	uk_view_set_model(w->root, undo_history("Search", 1));

	struct uk_view *query = uk_view_create(w->root, "query");
	CHECK(query);
	CHECK(uk_text_field_create(query, "Search notes", 64));
	struct uk_component *go = uk_button_create(query, "Go", on_click);
	CHECK(go);

	struct uk_view *results = uk_view_create(w->root, "results");
	CHECK(results);
	uk_view_set_model(results, store);
	CHECK(uk_label_create(results, "3 matches"));
	struct uk_component *stale = uk_label_create(results, "searching...");
	CHECK(stale);
	CHECK(uk_label_create(results, "Meeting notes"));
	uk_component_destroy(stale);

	CHECK(uk_window_layout(w) == 0);
	CHECK(uk_post_event(w, UK_EVENT_CLICK, go, 4, 4) == 0);
}

static void settings_window(struct uk_app *app)
{
	struct uk_window *w = uk_window_create(app, "Settings");
	CHECK(w);
	uk_view_set_model(w->root, undo_history("Settings", 0));

	struct uk_view *options = uk_view_create(w->root, "options");
	CHECK(options);
	struct settings *s = xmalloc(sizeof(*s));
	s->font = xstrdup("DejaVu Sans Mono");
	s->size = 11;
	truth_own("Settings", "options", s);
	truth_own("Settings", "options", s->font);
	uk_view_set_model(options, s);
	CHECK(uk_label_create(options, "Font"));
	CHECK(uk_label_create(options, "Size"));
	CHECK(uk_button_create(options, "Apply", on_click));
	struct uk_component *cancel = uk_button_create(options, "Cancel", on_click);
	CHECK(cancel);
	uk_component_destroy(cancel);

	CHECK(uk_window_layout(w) == 0);
	CHECK(uk_post_event(w, UK_EVENT_RESIZE, NULL, 640, 480) == 0);
}

// Builds everything; afterwards only uikit's globals lead to it.
__attribute__((noinline)) static void build_scene(void)
{
	struct uk_app *app = uk_app_create("notes");
	CHECK(app);
	struct note_store *store = note_store();
	notes_window(app, store);
	search_window(app, store);
	settings_window(app);
}

static void summary(void)
{
	struct uk_app *app = uk_the_app;
	unsigned views = 0, components = 0, pools = 0, free_slots = 0;
	for (uint32_t i = 0; i < app->nwindows; i++)
		views += app->windows[i]->nviews;
	for (struct uk_pool *p = uk_pools; p; p = p->next) {
		pools++;
		free_slots += p->nfree;
		components += p->nslots - p->nfree;
	}
	printf("%s: %u windows, %u views, %u components in %u pools "
	       "(%u free slots)\n",
	       app->name, app->nwindows, views, components, pools, free_slots);
}

// The breakpoint of the tests: the scene is complete and nothing else runs.
__attribute__((noinline, used)) void hd_fixture_stop(void)
{
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	const char *truth = NULL, *ready = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--truth") && i + 1 < argc)
			truth = argv[++i];
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			ready = argv[++i];
		else
			fail("usage: notes_app [--truth FILE [--wait READY]]");
	}
	if (!truth) {
		build_scene();
		summary();
		return 0;
	}
	if (ready)
		prctl(PR_SET_PDEATHSIG, SIGKILL); // don't outlive the test
	truth_begin();
	build_scene();
	truth_finish(truth);
	hd_fixture_stop();
	if (ready) {
		truth_ready(ready);
		for (;;)
			pause();
	}
	return 0;
}

// The ground truth notes_app writes for tests/frameworks/uikit: what
// heapdom's uikit module must report for the scene, known by construction.
#ifndef NOTES_TRUTH_H
#define NOTES_TRUTH_H

// Call before building the scene.
void truth_begin(void);
// The application's block p is kept alive by one node alone: view VIEW of
// window WINDOW; the window when view is NULL (its views share p); the
// application when window is NULL too (windows share it).
void truth_own(const char *window, const char *view, const void *p);
// p's immediate dominator must be that node (what: a name for messages).
void truth_expect(const void *p, const char *window, const char *view,
		  const char *what);
// Writes the truth file (format at the top of notes_truth.c), then clears
// every trace of the scene's addresses from the stack and registers.
void truth_finish(const char *path);
// Writes READY (the pid): the live test may attach.
void truth_ready(const char *ready);

#endif

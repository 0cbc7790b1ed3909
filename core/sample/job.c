// A sampling run for debugger front-ends: the words are parsed before the
// debugger lets go of the process, the sampling runs while it is
// detached, and the report is made at the stop after it attaches again.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"

struct hd_sample_job {
	struct hd_sample_options opts;
	char **words; // the options point into these
	int nwords;
	struct hd_samples *samples;
};

void hd_sample_job_destroy(struct hd_sample_job *job)
{
	if (!job)
		return;
	hd_samples_destroy(job->samples);
	for (int i = 0; i < job->nwords; i++)
		free(job->words[i]);
	free(job->words);
	free(job);
}

struct hd_error *hd_sample_job_create(int argc, char *const *argv,
				      struct hd_sample_job **ret)
{
	struct hd_sample_job *job = calloc(1, sizeof(*job));
	if (!job || !(job->words = calloc(argc ? (size_t)argc : 1, sizeof(char *)))) {
		free(job);
		return &hd_error_no_memory;
	}
	for (int i = 0; i < argc; i++) {
		job->words[i] = strdup(argv[i]);
		if (!job->words[i]) {
			hd_sample_job_destroy(job);
			return &hd_error_no_memory;
		}
		job->nwords = i + 1;
	}
	struct hd_error *err = hd_sample_parse(job->nwords, job->words, &job->opts);
	if (err) {
		hd_sample_job_destroy(job);
		return err;
	}
	*ret = job;
	return NULL;
}

struct hd_error *hd_sample_job_run(struct hd_sample_job *job, int pid)
{
	if (job->samples)
		return hd_error_create(HD_ERROR_INVALID, "this sampling job has already run");
	job->opts.pid = pid;
	return hd_sample_run(&job->opts, &job->samples);
}

struct hd_error *hd_sample_job_report(struct hd_sample_job *job,
				      struct hd_session *s, char **text)
{
	if (!job->samples)
		return hd_error_create(HD_ERROR_INVALID, "this sampling job has not run");
	size_t len;
	*text = NULL;
	FILE *out = open_memstream(text, &len);
	if (!out)
		return &hd_error_no_memory;
	struct hd_error *err = hd_render_sample(out, job->samples, s, &job->opts);
	if (fclose(out) != 0 && !err)
		err = &hd_error_no_memory;
	if (!err && job->opts.output)
		err = hd_sample_write_svg(job->opts.output, job->samples, &job->opts);
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err;
}

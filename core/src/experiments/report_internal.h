/* Inside the report (experiments/report.h): the Trials as read from
 * PLAN.results.jsonl (report.c), the answer computed from them per group
 * (report_answer.c), and its printers (report_print.c, report_html.c). */
#ifndef TB_REPORT_INTERNAL_H
#define TB_REPORT_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/strv.h"
#include "experiments/prices.h"

/* A Trial's outcome, as counted. */
/* K_UNRECORDED: the session ran, but trialbox could not write its final
 * Outcome (batch records it so, and never runs it again). */
enum { K_COMPLETED, K_FAILED, K_VOID, K_NOT_RUN, K_UNRECORDED, K_OTHER, K_COUNT };
extern const char *const report_kind_names[K_COUNT];

/* A Trial's grade: none (no grader, or never graded), or its status. A
 * status trialbox does not know counts as an error. */
enum grade_status { G_NONE, G_PASSED, G_FAILED, G_ERROR, G_VOID };

/* A Trial's tokens, when its line has them. */
struct rec_tokens {
        struct token_counts tok;
        struct strv models;     /* the tokens' models */
};

/* One results line, as much of it as the report needs: kept for every
 * Trial of a batch (its summary), so its strings are the report's, shared. */
struct trial_rec {
        unsigned keyset;        /* its --by values: r->keysets[keyset] */
        int kind;               /* K_* */
        int grade;              /* G_* */
        bool has_arm;           /* the line has an arm */
        bool has_score;
        const char *task;       /* r->tasks', or NULL when the line has none (a non-string: its JSON text) */
        const char *cause;      /* a failure's or a void's cause (r->causes'), else NULL */
        double score;
        long long duration_ms;  /* -1: unknown, or the Trial did not run */
        long long cpu_ms;       /* user + system; -1: unknown */
        long long peak_memory;  /* -1: unknown */
        struct rec_tokens *tokens; /* NULL: the line has none */
};

struct report {
        struct strv by;         /* the grouping keys: harness, arm, task or labels.NAME */
        bool *by_seen;          /* per key: some line has it */
        struct strv label_names; /* the labels the lines have, for a message */
        struct trial_rec *t;
        size_t n, cap;
        /* The distinct tuples of --by values, as the lines bring them: each
         * by.n values (referenced; NULL: the line has none), one group each. */
        json_object ***keysets;
        size_t n_keysets, cap_keysets;
        struct strv tasks, causes; /* the distinct tasks and causes the Trials point to */
        bool any_grade;         /* some line has a `grade` field (even null) */
        bool any_tokens;        /* some line has a `tokens` object */
        bool has_prices;
        struct prices prices;
        char *source;           /* the results file's name, for the page's title; may be NULL */
};

struct cause_count {
        int kind;
        char *cause;
        size_t n;
};

/* Why a group's cost is not known (or that it is). */
enum cost_state { COST_NO_PRICES, COST_NO_TOKENS, COST_KNOWN, COST_UNKNOWN };

/* A task's graded and passed Trials in a group. */
struct task_tally {
        const char *task;
        size_t graded, passed;
};

/* The answer for one group of Trials. */
struct group {
        json_object **keys;     /* the group's --by values: the report's keyset */
        size_t trials, by_kind[K_COUNT];
        long long *durations;   /* of the Trials that ran, sorted */
        size_t n_durations, cap_durations;
        long long p50_ms, p95_ms; /* -1: none */
        long long cpu_ms;       /* -1: no Trial reports it */
        long long peak_memory_max; /* -1: none known */
        struct cause_count *causes;
        size_t n_causes;

        size_t graded, passed, grade_errors, grade_void, not_graded;
        bool has_rate, has_rate_ci;
        double pass_rate, rate_low, rate_high;
        size_t scored;
        bool has_mean, has_mean_ci;
        double mean_score, mean_low, mean_high;
        struct task_tally *tasks; /* each task of the group's Trials (that have one) */
        size_t n_tasks;
        size_t k_max;           /* pass@1 … pass@k_max; 0: none */
        double *pass_at_k;
        size_t pass_at_k_tasks; /* the tasks averaged: those with a graded Trial */

        size_t token_trials;    /* Trials with `tokens` */
        struct token_counts tok;
        struct strv models;
        int cost_state;         /* COST_* */
        double cost_usd;
        char *cost_note;        /* why it is unknown; NULL when known */
};

/* One task of a paired difference. */
struct pair_task {
        const char *task;
        double rate_a, rate_b;
        size_t graded_a, graded_b;
};

/* A task left out of a paired difference, and the arm that has it graded
 * (NULL: neither). */
struct pair_left_out {
        const char *task;
        const char *graded_in;
};

/* Arm B against arm A, paired over the tasks both have graded. */
struct paired {
        const char *arm_a, *arm_b;
        struct pair_task *tasks;
        size_t n_tasks;
        struct pair_left_out *left_out;
        size_t n_left_out;
        bool has_diff, has_ci;
        double diff, low, high;
};

struct answer {
        const struct report *r;
        struct group *g;
        size_t n;
        size_t k_max;           /* the largest pass@k of any group */
        bool by_arm;            /* grouped by arm alone: the paired differences apply */
        struct paired *pairs;   /* each arm against the first */
        size_t n_pairs;
};

/* Group the Trials of `r` by its keys and compute every number. */
void answer_build(struct answer *a, const struct report *r);
void answer_done(struct answer *a);

/* A --by value as text: a string as is, anything else as its JSON text,
 * NULL (the line has none) as `none`. */
const char *report_key_text(json_object *v, const char *none);

/* The printers. */
void report_print_text(const struct answer *a, FILE *out);
void report_print_json(const struct answer *a, FILE *out);
void report_print_csv(const struct answer *a, FILE *out);
/* The page, whole, as one malloc'd string. */
char *report_html(const struct answer *a);

#endif

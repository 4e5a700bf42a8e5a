/* The batch-system job a Trial runs in, as outcome.json records it
 * (slurm_job_id, slurm_array_task_id) and as batch judges a launcher by. */
#ifndef TB_MODEL_JOB_H
#define TB_MODEL_JOB_H

struct slurm_ids {
        long long job_id;        /* the array's id (SLURM_ARRAY_JOB_ID), else SLURM_JOB_ID; -1: not in a job */
        long long array_task_id; /* SLURM_ARRAY_TASK_ID; -1: not an array task */
};
/* The ids of the Slurm job this process runs in, from `envp` (the
 * environment, read once at the command boundary). A missing or non-numeric
 * variable is -1. For an array task the job id is the array's, as sbatch
 * printed it and squeue shows it ("1234_7": job 1234, task 7). */
struct slurm_ids slurm_ids_from_env(char *const envp[]);

/* `s` as a non-negative decimal id, or -1 (NULL, a sign, anything after). */
long long job_parse_id(const char *s);

#endif

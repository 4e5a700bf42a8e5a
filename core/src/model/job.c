#include "model/job.h"

#include <errno.h>
#include <stdlib.h>

#include "base/env.h"

long long job_parse_id(const char *s)
{
        if (!s || *s < '0' || *s > '9')
                return -1;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        return errno || *end ? -1 : v;
}

struct slurm_ids slurm_ids_from_env(char *const envp[])
{
        struct slurm_ids ids = { .job_id = job_parse_id(env_lookup(envp, "SLURM_ARRAY_JOB_ID")),
                                 .array_task_id = job_parse_id(env_lookup(envp, "SLURM_ARRAY_TASK_ID")) };
        if (ids.job_id < 0 || ids.array_task_id < 0) {
                ids.job_id = job_parse_id(env_lookup(envp, "SLURM_JOB_ID"));
                ids.array_task_id = -1;
        }
        return ids;
}

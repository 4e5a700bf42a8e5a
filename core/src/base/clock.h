/* Time for timeouts and durations. */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

/* Milliseconds on the monotonic clock. */
long long now_ms(void);

#endif

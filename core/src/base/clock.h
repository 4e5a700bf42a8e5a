/* Time for timeouts and durations. */
#ifndef TB_CLOCK_H
#define TB_CLOCK_H

/* Milliseconds on the monotonic clock. */
long long now_ms(void);

/* Microseconds on the monotonic clock (the start-up marks, bench/'s drivers). */
long long now_us(void);

#endif

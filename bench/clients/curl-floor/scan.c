/*
 * scan.c - the naive floor's second half: reads a watch-list body from stdin
 * (curl writes it there, de-chunked), finds the newlines, counts the events and
 * stops at the k8s.io/initial-events-end bookmark. No JSON is parsed; a line
 * is an object when it starts as an ADDED event does.
 *
 * usage: curl ... URL | scan NAME T0
 *   NAME  the client name to print
 *   T0    CLOCK_REALTIME seconds (date +%s.%N) taken before curl started
 *
 * Prints {"client","objects","bytes","seconds_to_synced"} and exits 0 at the
 * bookmark (curl then ends on SIGPIPE), 1 if the stream ends first.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF (1 << 20)

static const char ADDED[] = "{\"type\":\"ADDED\"";
static const char BOOKMARK[] = "{\"type\":\"BOOKMARK\"";
static const char END[] = "k8s.io/initial-events-end";

/* Does line[0..len) hold the bookmark that ends the initial state? */
static int is_end(const char *line, size_t len) {
    if (len < sizeof BOOKMARK - 1 || memcmp(line, BOOKMARK, sizeof BOOKMARK - 1) != 0) return 0;
    return memmem(line, len, END, sizeof END - 1) != NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: curl ... | scan NAME T0\n");
        return 2;
    }
    double t0 = strtod(argv[2], NULL);
    /* A line can be larger than the buffer: keep only its first bytes (enough to classify it). */
    static char buf[BUF];
    char head[4096];
    size_t head_len = 0;
    unsigned long long objects = 0, bytes = 0, lines = 0;
    for (;;) {
        ssize_t n = read(0, buf, BUF);
        if (n <= 0) break;
        bytes += (unsigned long long)n;
        char *p = buf, *end = buf + n;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *stop = nl ? nl : end;
            size_t take = (size_t)(stop - p);
            if (head_len < sizeof head) {
                size_t room = sizeof head - head_len;
                size_t c = take < room ? take : room;
                memcpy(head + head_len, p, c);
                head_len += c;
            }
            if (!nl) break;
            lines++;
            if (head_len >= sizeof ADDED - 1 && memcmp(head, ADDED, sizeof ADDED - 1) == 0) {
                objects++;
            } else if (is_end(head, head_len)) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double secs = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 - t0;
                printf("{\"client\":\"%s\",\"objects\":%llu,\"bytes\":%llu,\"lines\":%llu,\"seconds_to_synced\":%.6f}\n",
                       argv[1], objects, bytes, lines, secs);
                fflush(stdout);
                return 0;
            }
            head_len = 0;
            p = nl + 1;
        }
    }
    fprintf(stderr, "scan: the stream ended after %llu lines, %llu objects, without the initial-events-end bookmark\n",
            lines, objects);
    return 1;
}

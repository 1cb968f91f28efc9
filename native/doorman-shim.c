/*
 * doorman-shim [--concurrent] SOCKET
 *
 * What Squid runs for every Doorman helper: relays request lines from stdin to doorman-authd's Unix socket
 * and reply lines back to stdout, at about 1 MB per child instead of a Node process's 50 (docs/seamless-design.md
 * §1). Squid takes a helper that exits for a crash, and gives up on the whole scheme after a few, so this one
 * never exits before stdin ends, and answers every line it read, exactly once, before it exits.
 *
 * Requests are kept, in arrival order, until answered: matched by channel-ID with --concurrent (Squid's
 * concurrency=N), else by order (a reply answers the oldest request sent). A reply that matches no request (a
 * late one after a local BH, a second one) is dropped, so Squid never gets two answers for one line.
 *
 * authd going away is a restart to wait for, not a failure: its listening sockets outlive it (socket units, or
 * its own handover), so connecting again at once, then every RETRY_MS, finds the next one. Meanwhile requests
 * are HELD, not answered BH, for up to hold_ms of outage; past that every held one and each new one gets
 * "BH message=..." while it stays down, and the socket is tried once every SLOW_RETRY_MS. Requests owed by the
 * dropped connection are sent again on the next with --concurrent (session, Basic and group lookups ask the same
 * thing twice harmlessly); without it (Negotiate, NTLM) the handshake died with the connection, so the owed one
 * is answered BH and Squid starts the handshake again. What is held is capped (MAX_PENDING requests,
 * MAX_HELD_BYTES): beyond that a request is answered BH at once.
 *
 * A live but stuck authd must not hang Squid: a request unanswered deadline_ms after it arrived is answered BH,
 * and a connection silent that long is dropped and made again (tick() says when); connect() is non-blocking (a
 * full backlog fails at once), and one still in progress after CONNECT_MS is abandoned. At the end of stdin the shim goes on until every request read
 * is answered (each within deadline_ms), then exits; at once if stdout is gone (nobody to answer).
 *
 * Lines are framed in both directions: a request is sent to authd only whole, a reply is written to Squid only
 * whole, so a connection that drops mid-line never leaves half a line on either side. A line longer than
 * MAX_LINE is answered BH here and skipped up to its LF. A line from authd that starts with '#' is a line for
 * cache.log, written to stderr.
 *
 * Test knobs (environment, milliseconds): DOORMAN_SHIM_HOLD_MS (10000) and DOORMAN_SHIM_DEADLINE_MS (30000).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* authd caps Negotiate lines at 64 KiB (lib/helper-protocol/negotiate.ts: Windows tokens with large PACs come
   near 64,000 characters) and answers longer ones BH with its reason; the margin keeps this cap above it. */
#define MAX_LINE (64 * 1024 + 4096)
/* Requests kept at once: Squid sends at most concurrency=N (<= 1000 in Doorman's config) at once. */
#define MAX_PENDING 4096
/* Bytes of request lines kept at once: a thousand lookups are ~100 KB; a child's RSS is ~1 MB. */
#define MAX_HELD_BYTES (1024 * 1024)
#define ID_LEN 20 /* Squid's channel-IDs are uint64_t in decimal */
/* Planned restarts hand the listening socket over within a second; Squid's clients wait far longer. */
#define HOLD_MS 10000
/* Above authd's own bounds (a directory answers or fails within its connectTimeoutMs + timeoutMs, 5 + 10 s by
   default), so authd's BH with its reason comes first; Negotiate through ntlm_auth takes well under a second. */
#define DEADLINE_MS 30000
#define RETRY_MS 100
#define SLOW_RETRY_MS 1000
#define CONNECT_MS 1000

#define DOWN "doorman%20auth%20service%20unavailable%2C%20see%20cache.log"
#define LATE "doorman%20auth%20service%20did%20not%20answer%20in%20time%2C%20see%20cache.log"
#define TOO_LONG "request%20line%20too%20long"

struct framer { /* one direction's unfinished line */
  char buf[MAX_LINE + 1];
  size_t len;
  int skipping;          /* an overlong line is being skipped up to its LF */
  char head[ID_LEN + 1]; /* its channel-ID, kept for the BH */
};

struct req { /* a request read and not yet answered */
  struct req *prev, *next;
  int64_t at; /* when it was read */
  char *line; /* with its LF */
  size_t len, written; /* written: bytes of it sent on the current connection */
  char id[ID_LEN + 1];
};

static const char *path;
static int concurrent, sock = -1;
static enum { OFF, CONNECTING, ON } state;
static unsigned connection; /* counts sockets, so a poll result is never read off a newer one */
static int64_t now, down_since, last_attempt = INT64_MIN / 2, hold_ms = HOLD_MS, deadline_ms = DEADLINE_MS;
static int64_t last_heard; /* when the current connection was made, or last brought bytes */
static int outage_logged, hold_logged;
static struct req pool[MAX_PENDING], *spare; /* spare: answered ones, linked through next */
static size_t pool_used, nreq, held_bytes;   /* pool_used: untouched entries cost no RSS */
static struct req queue = {&queue, &queue, 0, 0, 0, 0, ""}; /* sentinel of the list, oldest first */
/* The first request not yet wholly written on the current connection: those before it are owed by authd. */
static struct req *cursor = &queue;
static struct framer in, rep;
/* What one wake-up produced for Squid, written in one go (a batch of answers is one write). */
static struct outbuf {
  char b[2 * (MAX_LINE + 1)];
  size_t n;
} to_squid;

static int64_t clock_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int writeall(int fd, const char *b, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Squid owns stdout: if it is gone, so is the reason to live. */
static void flush_squid(void) {
  if (to_squid.n > 0 && writeall(1, to_squid.b, to_squid.n) < 0) _exit(1);
  to_squid.n = 0;
}

static void out(const char *b, size_t n) { /* n <= MAX_LINE + 1: one line */
  if (to_squid.n + n > sizeof to_squid.b) flush_squid();
  memcpy(to_squid.b + to_squid.n, b, n);
  to_squid.n += n;
}

/* The channel-ID at the start of a line ("" when there is none, or without --concurrent: no reply carries one
   then): 1-20 digits, then a space or the end. */
static void channel_of(const char *line, size_t len, char id[ID_LEN + 1]) {
  size_t n = 0;
  while (concurrent && n < len && n <= ID_LEN && line[n] >= '0' && line[n] <= '9') n++;
  if (n == 0 || n > ID_LEN || (n < len && line[n] != ' ' && line[n] != '\r' && line[n] != '\n')) n = 0;
  memcpy(id, line, n);
  id[n] = '\0';
}

static void bh(const char *id, const char *message) {
  char line[ID_LEN + 128];
  int n = snprintf(line, sizeof line, "%s%sBH message=%s\n", id, *id ? " " : "", message);
  out(line, (size_t)n);
}

static void forget(struct req *r) {
  if (cursor == r) cursor = r->next;
  r->prev->next = r->next;
  r->next->prev = r->prev;
  held_bytes -= r->len;
  free(r->line);
  r->next = spare;
  spare = r;
  nreq--;
}

static void answer_bh(struct req *r, const char *message) {
  bh(r->id, message);
  forget(r);
}

/* The oldest request wholly sent on this connection with this channel-ID, or NULL. */
static struct req *owed(const char *id) {
  for (struct req *r = queue.next; r != cursor; r = r->next)
    if (strcmp(r->id, id) == 0) return r;
  return NULL;
}

static void start_outage(void) {
  state = OFF;
  down_since = now;
  outage_logged = hold_logged = 0;
}

/* The connection is gone: what it owed is sent again on the next (--concurrent), or answered BH. */
static void drop(const char *why) {
  fprintf(stderr, "doorman-shim: %s: %s; reconnecting, holding requests for up to %lld ms\n", path, why,
          (long long)hold_ms);
  close(sock);
  sock = -1;
  start_outage();
  outage_logged = 1;
  for (struct req *r = queue.next, *next; r != &queue; r = next) {
    next = r->next;
    if (r->written == 0) continue;
    if (concurrent) r->written = 0;
    else answer_bh(r, DOWN);
  }
  cursor = queue.next;
}

static void connected(void) {
  state = ON;
  last_heard = now;
  rep.len = 0;
  rep.skipping = 0;
  cursor = queue.next;
  fprintf(stderr, "doorman-shim: connected to %s\n", path);
}

static void connect_failed(int error) {
  if (sock >= 0) close(sock);
  sock = -1;
  state = OFF;
  if (!outage_logged)
    fprintf(stderr, "doorman-shim: %s: %s; holding requests for up to %lld ms until it answers\n", path,
            strerror(error), (long long)hold_ms);
  outage_logged = 1;
}

static void try_connect(void) {
  last_attempt = now;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return connect_failed(errno);
  sock = s;
  connection++;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);
  if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) return connected();
  if (errno == EINPROGRESS) { /* not on Linux for AF_UNIX (a full backlog is EAGAIN), but never block on it */
    state = CONNECTING;
    return;
  }
  connect_failed(errno);
}

static int past_hold(void) { return state != ON && now - down_since >= hold_ms; }

/* Timers: requests past their deadline, connects past theirs, reconnects due, outages past the hold. A request
   answered BH here that authd was sent makes a new connection when authd has been silent for the whole deadline
   (stopped, stuck), or always without --concurrent (replies are matched by order: a late one must never come).
   Otherwise authd is alive and that one request slow: the connection stays, its late reply is dropped by ID, and
   requests sent again on a new connection do not each make another. */
static void tick(void) {
  int stuck = 0;
  while (queue.next != &queue && now - queue.next->at >= deadline_ms) {
    stuck |= queue.next->written > 0;
    answer_bh(queue.next, LATE);
  }
  if (stuck && state == ON && (!concurrent || now - last_heard >= deadline_ms))
    drop("a request unanswered in time was answered BH");
  if (state == CONNECTING && now - last_attempt >= CONNECT_MS) connect_failed(ETIMEDOUT);
  if (state == OFF && now - last_attempt >= (past_hold() ? SLOW_RETRY_MS : RETRY_MS)) try_connect();
  if (past_hold()) {
    if (!hold_logged)
      fprintf(stderr, "doorman-shim: %s: down for %lld ms: answering BH until it is back\n", path,
              (long long)hold_ms);
    hold_logged = 1;
    while (queue.next != &queue) answer_bh(queue.next, DOWN);
  }
}

/* Milliseconds until tick() has something to do, or -1. */
static int next_tick(void) {
  int64_t at = INT64_MAX;
  if (queue.next != &queue) at = queue.next->at + deadline_ms;
  if (state == CONNECTING && last_attempt + CONNECT_MS < at) at = last_attempt + CONNECT_MS;
  if (state == OFF) {
    int64_t retry = last_attempt + (past_hold() ? SLOW_RETRY_MS : RETRY_MS);
    if (retry < at) at = retry;
    if (!hold_logged && down_since + hold_ms < at) at = down_since + hold_ms;
  }
  return at == INT64_MAX ? -1 : at <= now ? 0 : at - now > 60000 ? 60000 : (int)(at - now);
}

/* Write what is not yet sent, as far as the socket takes it now (never waiting: a stuck authd fills it). */
static void pump(void) {
  while (state == ON && cursor != &queue) {
    struct iovec v[256];
    int n = 0;
    for (struct req *r = cursor; r != &queue && n < 256; r = r->next)
      v[n++] = (struct iovec){r->line + r->written, r->len - r->written};
    ssize_t w = writev(sock, v, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (w < 0) return drop(strerror(errno));
    for (size_t left = (size_t)w; left > 0;) {
      size_t k = cursor->len - cursor->written < left ? cursor->len - cursor->written : left;
      cursor->written += k;
      left -= k;
      if (cursor->written == cursor->len) cursor = cursor->next;
    }
  }
}

/* A whole request line (LF included): kept until answered, and sent when connected. */
static void request(const char *line, size_t len) {
  char id[ID_LEN + 1];
  channel_of(line, len, id);
  if (past_hold() && now - last_attempt >= SLOW_RETRY_MS) try_connect(); /* back? then this one is served */
  if (past_hold()) return bh(id, DOWN);
  if (nreq == MAX_PENDING) return bh(id, "too%20many%20requests%20in%20flight");
  char *copy = held_bytes + len <= MAX_HELD_BYTES ? malloc(len) : NULL;
  if (copy == NULL) return bh(id, "too%20many%20bytes%20in%20flight");
  struct req *r = spare ? spare : &pool[pool_used++];
  if (r == spare) spare = spare->next;
  *r = (struct req){queue.prev, &queue, now, copy, len, 0, ""};
  memcpy(copy, line, len);
  memcpy(r->id, id, sizeof id);
  queue.prev->next = r;
  queue.prev = r;
  if (cursor == &queue) cursor = r;
  held_bytes += len;
  nreq++;
}

/* A whole reply line: to Squid in place of the request it answers; dropped if it answers none. A line authd
   starts with '#' is no reply (a reply starts with a channel-ID or a result) but a line for cache.log: to
   stderr, which Squid puts there. */
static void reply(const char *line, size_t len) {
  char id[ID_LEN + 1];
  if (line[0] == '#') {
    writeall(STDERR_FILENO, line + 1, len - 1); /* one write: lines of many shims never interleave */
    return;
  }
  channel_of(line, len, id);
  struct req *r = owed(id);
  if (r == NULL) {
    fprintf(stderr, "doorman-shim: %s: a reply to no request owed (channel-ID \"%s\"): dropped\n", path, id);
    return;
  }
  out(line, len);
  forget(r);
}

/* A line too long to frame: a request is never sent; a reply (authd caps its own, so never) is owed as BH. */
static void overlong(const struct framer *f) {
  fprintf(stderr, "doorman-shim: %s line longer than %d bytes: answered BH\n",
          f == &in ? "request" : "reply", MAX_LINE);
  if (f == &in) return bh(f->head, TOO_LONG);
  struct req *r = owed(f->head);
  if (r) answer_bh(r, "reply%20too%20long");
}

/* Feed bytes; each complete line goes to `line`, an overlong one to BH (with the channel-ID it began with). */
static void frame(struct framer *f, const char *b, size_t n, void (*line)(const char *, size_t)) {
  while (n > 0) {
    const char *lf = memchr(b, '\n', n);
    size_t take = lf ? (size_t)(lf - b) + 1 : n;
    if (!f->skipping && f->len + take > MAX_LINE + 1) { /* +1: the LF */
      channel_of(f->buf, f->len, f->head);
      if (f->len == 0) channel_of(b, take, f->head);
      f->skipping = 1;
      f->len = 0;
    }
    if (f->skipping) {
      if (lf) f->skipping = 0, overlong(f);
    } else if (lf && f->len == 0) {
      line(b, take); /* the usual case: a whole line in this read, no copy */
    } else {
      memcpy(f->buf + f->len, b, take);
      f->len += take;
      if (lf) line(f->buf, f->len), f->len = 0;
    }
    b += take;
    n -= take;
  }
}

/* A knob from the environment: its default, or milliseconds 1..3600000; anything else stops the start. */
static int knob(const char *name, int64_t *value) {
  const char *s = getenv(name);
  if (s == NULL) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s < '0' || *s > '9' || *end || errno || v < 1 || v > 3600000) {
    fprintf(stderr, "doorman-shim: %s=\"%.32s\": not a number of milliseconds from 1 to 3600000\n", name, s);
    return -1;
  }
  *value = v;
  return 0;
}

int main(int argc, char **argv) {
  int a = 1;
  if (a < argc && strcmp(argv[a], "--concurrent") == 0) concurrent = 1, a++;
  if (argc - a != 1 || strlen(argv[a]) >= sizeof((struct sockaddr_un *)0)->sun_path) {
    fprintf(stderr, "usage: doorman-shim [--concurrent] SOCKET (a Unix socket path, < 108 bytes)\n");
    return 2;
  }
  if (knob("DOORMAN_SHIM_HOLD_MS", &hold_ms) || knob("DOORMAN_SHIM_DEADLINE_MS", &deadline_ms)) return 2;
  path = argv[a];
  signal(SIGPIPE, SIG_IGN); /* a write to a dropped socket fails with EPIPE instead of killing us */
  now = clock_ms();
  start_outage();
  int eof = 0;
  static char buf[65536];
  for (;;) {
    tick();
    pump();
    flush_squid();
    if (eof && nreq == 0) return 0;
    /* stdin until it ends, then stdout (events 0: only its error or hang-up, when Squid is gone). */
    struct pollfd p[2] = {{.fd = eof ? 1 : 0, .events = eof ? 0 : POLLIN}, {.fd = sock, .events = POLLIN}};
    if (state == CONNECTING || (state == ON && cursor != &queue)) p[1].events |= POLLOUT;
    unsigned polled = connection;
    if (poll(p, sock < 0 ? 1 : 2, next_tick()) < 0 && errno != EINTR) return 1;
    now = clock_ms();
    if (eof && p[0].revents) return 0;
    if (p[0].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0) frame(&in, buf, (size_t)n, request);
      pump(); /* what one read brought is one write to authd (so authd answers it as one batch) */
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        eof = 1; /* Squid is done with us: answer what was read (a last line without its LF too), then go */
        if (in.len > 0 || in.skipping) frame(&in, "\n", 1, request);
      }
    }
    if (sock < 0 || polled != connection || p[1].fd != sock || !p[1].revents) continue;
    if (state == CONNECTING) {
      int error = 0;
      socklen_t size = sizeof error;
      if (getsockopt(sock, SOL_SOCKET, SO_ERROR, &error, &size) < 0) error = errno;
      if (error) connect_failed(error);
      else connected();
    } else if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(sock, buf, sizeof buf);
      if (n > 0) last_heard = now, frame(&rep, buf, (size_t)n, reply);
      else if (n == 0) drop("the service closed the connection");
      else if (errno != EINTR && errno != EAGAIN) drop(strerror(errno));
    }
  }
}

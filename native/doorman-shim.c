/*
 * doorman-shim [--concurrent] SOCKET
 *
 * What Squid runs for every Doorman helper: relays request lines from stdin to doorman-authd's Unix socket
 * and reply lines back to stdout, at about 1 MB per child instead of a Node process's 50 (docs/seamless-design.md
 * §1). Squid takes a helper that exits for a crash, and gives up on the whole scheme after a few, so this one
 * never exits before stdin ends: while authd is down (restarting, not started yet) every request that was sent
 * and not answered, and every new one, gets "BH message=...", and the socket is tried again at most once a
 * second. Requests are counted (lines out minus lines back), or, with --concurrent (Squid's concurrency=N),
 * tracked by channel-ID, so each unanswered one gets its BH with its own ID.
 *
 * Lines are framed in both directions: a request is sent to authd only whole, a reply is written to Squid only
 * whole, so a connection that drops mid-line never leaves half a line on either side. A line longer than
 * MAX_LINE is answered BH here and skipped up to its LF. Without --concurrent Squid sends one request at a
 * time (it waits for each answer), so a local BH can never overtake an answer still due. A line from authd
 * that starts with '#' is a line for cache.log, written to stderr.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* authd caps Negotiate lines at 64 KiB (lib/helper-protocol/negotiate.ts: Windows tokens with large PACs come
   near 64,000 characters) and answers longer ones BH with its reason; the margin keeps this cap above it. */
#define MAX_LINE (64 * 1024 + 4096)
/* Outstanding channel-IDs: Squid sends at most concurrency=N (<= 1000 in Doorman's config) at once. */
#define MAX_PENDING 4096
#define ID_LEN 20 /* Squid's channel-IDs are uint64_t in decimal */

#define DOWN "doorman%20auth%20service%20unavailable%2C%20see%20cache.log"
#define TOO_LONG "request%20line%20too%20long"

struct framer { /* one direction's unfinished line */
  char buf[MAX_LINE + 1];
  size_t len;
  int skipping;          /* an overlong line is being skipped up to its LF */
  char head[ID_LEN + 1]; /* its channel-ID, kept for the BH */
};

static const char *path;
static int concurrent, sock = -1;
static unsigned connection; /* counts connections, so a poll result is never read off a newer socket */
static struct timespec last_attempt;
static size_t unanswered;                 /* lines out minus lines back (without --concurrent) */
static char ids[MAX_PENDING][ID_LEN + 1]; /* channel-IDs out and not back (with --concurrent) */
static size_t nids;
static struct framer in, rep;
/* What one read produced, written in one go: a read of 100 requests is one write to authd (so authd answers
   them as one batch), and their answers one write to Squid. Flushed before the next poll, or when full. */
static struct outbuf {
  char b[2 * (MAX_LINE + 1)];
  size_t n;
} to_sock, to_squid;

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

static void drop(const char *why);

static void flush_sock(void) {
  size_t n = to_sock.n;
  to_sock.n = 0;
  if (n > 0 && sock >= 0 && writeall(sock, to_sock.b, n) < 0) drop(strerror(errno));
}

/* The channel-ID at the start of a line ("" when there is none): 1-20 digits, then a space or the end. */
static void channel_of(const char *line, size_t len, char id[ID_LEN + 1]) {
  size_t n = 0;
  while (n < len && n <= ID_LEN && line[n] >= '0' && line[n] <= '9') n++;
  if (n == 0 || n > ID_LEN || (n < len && line[n] != ' ' && line[n] != '\r' && line[n] != '\n')) n = 0;
  memcpy(id, line, n);
  id[n] = '\0';
}

static void bh(const char *id, const char *message) {
  char line[ID_LEN + 128];
  int n = snprintf(line, sizeof line, "%s%sBH message=%s\n", id, *id ? " " : "", message);
  out(line, (size_t)n);
}

static double since(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Returns 0, or the errno of the failure (not logged here: once per outage is enough, not once a second). */
static int try_connect(void) {
  clock_gettime(CLOCK_MONOTONIC, &last_attempt);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, path, strlen(path) + 1);
  if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
    sock = s;
    connection++;
    rep.len = 0;
    rep.skipping = 0;
    fprintf(stderr, "doorman-shim: connected to %s\n", path);
    return 0;
  }
  int error = errno;
  if (s >= 0) close(s);
  return error;
}

/* The service went away: every request it still owed is answered here. */
static void drop(const char *why) {
  fprintf(stderr, "doorman-shim: %s: %s; answering BH until it is back\n", path, why);
  close(sock);
  sock = -1;
  for (; unanswered > 0; unanswered--) bh("", DOWN);
  for (size_t i = 0; i < nids; i++) bh(ids[i], DOWN);
  nids = 0;
}

/* A whole request line (LF included): to authd, remembered as owed; or BH at once while it is down. */
static void request(const char *line, size_t len) {
  char id[ID_LEN + 1];
  channel_of(line, len, id);
  if (to_sock.n + len > sizeof to_sock.b) flush_sock();
  if (sock < 0 && since(&last_attempt) >= 1.0) try_connect();
  if (sock < 0) return bh(id, DOWN);
  if (concurrent && *id) {
    if (nids == MAX_PENDING) return bh(id, "too%20many%20requests%20in%20flight");
    memcpy(ids[nids++], id, sizeof id);
  } else if (!concurrent) {
    unanswered++;
  }
  memcpy(to_sock.b + to_sock.n, line, len); /* owed from now on: a failed write answers it BH (drop) */
  to_sock.n += len;
}

/* The request with this channel-ID (or the oldest, without --concurrent) is answered. */
static void settle(const char *id) {
  if (concurrent) {
    for (size_t i = 0; i < nids; i++)
      if (strcmp(ids[i], id) == 0) {
        memcpy(ids[i], ids[--nids], sizeof ids[i]);
        break;
      }
  } else if (unanswered > 0) {
    unanswered--;
  }
}

/* A whole reply line: to Squid, and no longer owed. A line authd starts with '#' is no reply (a reply starts
   with a channel-ID or a result) but a line for cache.log: to stderr, which Squid puts there. */
static void reply(const char *line, size_t len) {
  char id[ID_LEN + 1];
  if (line[0] == '#') {
    writeall(STDERR_FILENO, line + 1, len - 1); /* one write: lines of many shims never interleave */
    return;
  }
  channel_of(line, len, id);
  settle(id);
  out(line, len);
}

/* A line too long to frame: a request is never sent; a reply (authd caps its own, so never) is owed as BH. */
static void overlong(const struct framer *f) {
  fprintf(stderr, "doorman-shim: %s line longer than %d bytes: answered BH\n",
          f == &in ? "request" : "reply", MAX_LINE);
  if (f == &rep) settle(f->head);
  bh(f->head, f == &in ? TOO_LONG : "reply%20too%20long");
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

int main(int argc, char **argv) {
  int a = 1;
  if (a < argc && strcmp(argv[a], "--concurrent") == 0) concurrent = 1, a++;
  if (argc - a != 1 || strlen(argv[a]) >= sizeof((struct sockaddr_un *)0)->sun_path) {
    fprintf(stderr, "usage: doorman-shim [--concurrent] SOCKET (a Unix socket path, < 108 bytes)\n");
    return 2;
  }
  path = argv[a];
  signal(SIGPIPE, SIG_IGN); /* a write to a dropped socket fails with EPIPE instead of killing us */
  int error = try_connect();
  if (error) fprintf(stderr, "doorman-shim: %s: %s; answering BH until it is up\n", path, strerror(error));
  static char buf[65536];
  for (;;) {
    struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
    unsigned polled = connection;
    /* While down, wake once a second to try again, so the first request after a restart is served. */
    int timeout = sock < 0 ? 1000 : -1;
    if (poll(p, sock < 0 ? 1 : 2, timeout) < 0 && errno != EINTR) return 1;
    if (sock < 0 && since(&last_attempt) >= 1.0) try_connect();
    if (p[0].revents) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return 0; /* Squid is done with us */
      if (n > 0) frame(&in, buf, (size_t)n, request);
      flush_sock();
    }
    if (sock >= 0 && polled == connection && p[1].fd == sock && p[1].revents) {
      ssize_t n = read(sock, buf, sizeof buf);
      if (n > 0) frame(&rep, buf, (size_t)n, reply);
      else if (n == 0) drop("the service closed the connection");
      else if (errno != EINTR && errno != EAGAIN) drop(strerror(errno));
    }
    flush_squid();
  }
}

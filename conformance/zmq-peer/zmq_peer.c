/*
 * zmq_peer: a libzmq peer process for omq's interop tests.
 *
 * Why a separate process driven over stdin/stdout (instead of linking libzmq
 * into the Rust tests): the Rust workspace stays free of unsafe code and of
 * C build steps, a test can SIGKILL and restart the peer to exercise fault
 * handling, and a crash or hang inside libzmq can only fail one test.
 *
 * Protocol: one command per line on stdin, exactly one reply line per command
 * on stdout (flushed).  Before the first command the peer prints
 *
 *     ready libzmq X.Y.Z curve=1|0
 *
 * Replies are `ok [...]` or `err <ERRNO-NAME> <text>`.  Binary data travels as
 * lower-case hex so any byte (NUL, newline, 0xff) passes; an empty part is `-`.
 * Wherever binary data is accepted, `str:TEXT` (TEXT taken literally, no
 * spaces) is accepted too, and `null` passes a NULL pointer of length 0 to
 * zmq_setsockopt (libzmq treats that as "reset" for some options).
 *
 * Commands (ID is a small integer 0..MAX_SOCKETS-1 chosen by the caller):
 *   version                          ok libzmq X.Y.Z curve=1|0
 *   socket ID TYPE                   ok          (PAIR PUB SUB REQ REP DEALER
 *                                                 ROUTER PULL PUSH XPUB XSUB STREAM)
 *   setsockopt ID NAME VALUE         ok          (int options: decimal;
 *                                                 binary/string options: hex,
 *                                                 -, str:TEXT or null)
 *   getsockopt ID NAME               ok VALUE    (int: decimal; binary: hex or -;
 *                                                 string: str:TEXT or -;
 *                                                 CURVE keys: str:Z85;
 *                                                 LAST_ENDPOINT: raw text or -)
 *   bind ID ENDPOINT                 ok LAST_ENDPOINT
 *   connect|unbind|disconnect ID EP  ok
 *   send ID [dontwait] PART...       ok          (multipart: SNDMORE on all but last)
 *   recv ID TIMEOUT_MS               ok PART...  or err EAGAIN on timeout
 *   recvmeta ID TIMEOUT_MS PROP      ok META PART...  (META: str:TEXT, hex when
 *                                                 TEXT has spaces/unprintables,
 *                                                 or - when absent)
 *   monitor ID                       ok          (zmq_socket_monitor on
 *                                                 inproc://monitor-ID, all events)
 *   event ID TIMEOUT_MS              ok NAME VALUE ENDPOINT  or err EAGAIN
 *   close ID                         ok          (socket closed; its monitor stays
 *                                                 readable for the final events)
 *   sleep MS                         ok
 * With ZMQ_BUILD_DRAFT_API (the draft peer, built against a libzmq with drafts):
 *   socket ID CLIENT|SERVER|RADIO|DISH|SCATTER|GATHER|PEER|CHANNEL
 *   sendx ID RID GROUP PART          ok          (one part; RID decimal, 0: none;
 *                                                 GROUP hex/str:/-, -: none)
 *   recvx ID TIMEOUT_MS              ok RID GROUP PART  (RID decimal or 0;
 *                                                 GROUP hex or -) or err EAGAIN
 *   connectpeer ID ENDPOINT          ok RID
 *   join|leave ID GROUP              ok
 *   exit                             ok, then closes everything (linger 0), exit 0
 * EOF on stdin behaves like exit.  Malformed input gets `err EINVAL <what>`.
 */

#define _GNU_SOURCE /* getline, strtok_r, nanosleep */

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_SOCKETS 1024
#define MAX_TOKENS_HINT 16

/* ------------------------------------------------------------------------ */
/* State                                                                     */

#define MAX_IPC_FILES 8

typedef struct {
    void *sock; /* the socket under test, NULL if none / closed */
    void *mon;  /* PAIR connected to the socket's monitor, NULL if none */
    /* Socket files this socket bound: libzmq 4.3 removes an ipc file on zmq_unbind but not
     * on zmq_close, so the peer removes them itself when it closes the socket. */
    char *ipc_files[MAX_IPC_FILES];
} slot_t;

static void *g_ctx;
static slot_t g_slots[MAX_SOCKETS];

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

static void reply_line(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static const char *errno_name(int e)
{
    switch (e) {
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case ENOENT: return "ENOENT";
    case ENOMEM: return "ENOMEM";
    case EINTR: return "EINTR";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EMFILE: return "EMFILE";
    case ENODEV: return "ENODEV";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOTSUP: return "ENOTSUP";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ENOBUFS: return "ENOBUFS";
    case ENETDOWN: return "ENETDOWN";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EINPROGRESS: return "EINPROGRESS";
    case ENOTSOCK: return "ENOTSOCK";
    case EMSGSIZE: return "EMSGSIZE";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNABORTED: return "ECONNABORTED";
    case ECONNRESET: return "ECONNRESET";
    case ENOTCONN: return "ENOTCONN";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENETRESET: return "ENETRESET";
    case EFSM: return "EFSM";
    case ENOCOMPATPROTO: return "ENOCOMPATPROTO";
    case ETERM: return "ETERM";
    case EMTHREAD: return "EMTHREAD";
    default: return NULL;
    }
}

/* err <ERRNO-NAME> <strerror text> for the current zmq_errno(). */
static void reply_zmq_err(void)
{
    int e = zmq_errno();
    const char *name = errno_name(e);
    if (name)
        reply_line("err %s %s", name, zmq_strerror(e));
    else
        reply_line("err E%d %s", e, zmq_strerror(e));
}

/* err EINVAL <what> for malformed commands. */
static void reply_inval(const char *fmt, ...)
{
    va_list ap;
    fputs("err EINVAL ", stdout);
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static void put_hex(const unsigned char *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    if (len == 0) {
        fputc('-', stdout);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        fputc(digits[data[i] >> 4], stdout);
        fputc(digits[data[i] & 0xf], stdout);
    }
}

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */

/* A decoded binary argument.  `data` is NULL only for the `null` token. */
typedef struct {
    unsigned char *data;
    size_t len;
} blob_t;

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes hex / `-` / `str:TEXT` / `null` into a fresh allocation.
 * Returns 0 on success, -1 (nothing allocated) if malformed. */
static int parse_blob(const char *tok, blob_t *out)
{
    out->data = NULL;
    out->len = 0;
    if (strcmp(tok, "null") == 0)
        return 0;
    if (strcmp(tok, "-") == 0) {
        out->data = malloc(1);
        return out->data ? 0 : -1;
    }
    if (strncmp(tok, "str:", 4) == 0) {
        size_t n = strlen(tok + 4);
        out->data = malloc(n + 1);
        if (!out->data) return -1;
        memcpy(out->data, tok + 4, n + 1);
        out->len = n;
        return 0;
    }
    size_t n = strlen(tok);
    if (n == 0 || n % 2 != 0)
        return -1;
    out->data = malloc(n / 2 + 1);
    if (!out->data) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(tok[2 * i]);
        int lo = hexval(tok[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(out->data);
            out->data = NULL;
            return -1;
        }
        out->data[i] = (unsigned char) (hi << 4 | lo);
    }
    out->len = n / 2;
    return 0;
}

/* Strict decimal parse into [lo, hi].  Returns 0 on success. */
static int parse_i64(const char *tok, long long lo, long long hi, long long *out)
{
    if (!tok || !*tok) return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(tok, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Socket id argument; replies EINVAL itself and returns -1 on failure. */
static int parse_id(const char *tok)
{
    long long id;
    if (!tok || parse_i64(tok, 0, MAX_SOCKETS - 1, &id) != 0) {
        reply_inval("bad socket id '%s' (want 0..%d)", tok ? tok : "", MAX_SOCKETS - 1);
        return -1;
    }
    return (int) id;
}

/* Id of an existing, open socket; replies and returns -1 otherwise. */
static int parse_live_id(const char *tok)
{
    int id = parse_id(tok);
    if (id < 0) return -1;
    if (!g_slots[id].sock) {
        reply_inval("no open socket with id %d", id);
        return -1;
    }
    return id;
}

static int parse_timeout(const char *tok, long *out)
{
    long long v;
    if (!tok || parse_i64(tok, -1, INT_MAX, &v) != 0) {
        reply_inval("bad timeout '%s' (want ms, -1 = forever)", tok ? tok : "");
        return -1;
    }
    *out = (long) v;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */

typedef struct {
    const char *name;
    int value;
} named_t;

static const named_t socket_types[] = {
    {"PAIR", ZMQ_PAIR},     {"PUB", ZMQ_PUB},       {"SUB", ZMQ_SUB},
    {"REQ", ZMQ_REQ},       {"REP", ZMQ_REP},       {"DEALER", ZMQ_DEALER},
    {"ROUTER", ZMQ_ROUTER}, {"PULL", ZMQ_PULL},     {"PUSH", ZMQ_PUSH},
    {"XPUB", ZMQ_XPUB},     {"XSUB", ZMQ_XSUB},     {"STREAM", ZMQ_STREAM},
#ifdef ZMQ_BUILD_DRAFT_API
    {"CLIENT", ZMQ_CLIENT}, {"SERVER", ZMQ_SERVER}, {"RADIO", ZMQ_RADIO},
    {"DISH", ZMQ_DISH},     {"SCATTER", ZMQ_SCATTER}, {"GATHER", ZMQ_GATHER},
    {"PEER", ZMQ_PEER},     {"CHANNEL", ZMQ_CHANNEL},
#endif
    {NULL, 0},
};

typedef enum {
    OPT_INT,      /* int, decimal */
    OPT_INT64,    /* int64_t, decimal */
    OPT_BIN,      /* bytes: hex / - / str: / null; read back as hex */
    OPT_STR,      /* text: same input forms; read back as str:TEXT */
    OPT_KEY,      /* CURVE key: 32 raw bytes (hex) or str:Z85; read back as str:Z85 */
    OPT_ENDPOINT, /* read-only text, read back raw */
} opt_kind_t;

typedef struct {
    const char *name;
    int value;
    opt_kind_t kind;
} option_t;

static const option_t options[] = {
    /* HWM, timeouts, lifecycle */
    {"SNDHWM", ZMQ_SNDHWM, OPT_INT},
    {"RCVHWM", ZMQ_RCVHWM, OPT_INT},
    {"LINGER", ZMQ_LINGER, OPT_INT},
    {"RCVTIMEO", ZMQ_RCVTIMEO, OPT_INT},
    {"SNDTIMEO", ZMQ_SNDTIMEO, OPT_INT},
    {"IMMEDIATE", ZMQ_IMMEDIATE, OPT_INT},
    {"RECONNECT_IVL", ZMQ_RECONNECT_IVL, OPT_INT},
    {"RECONNECT_IVL_MAX", ZMQ_RECONNECT_IVL_MAX, OPT_INT},
    {"HEARTBEAT_IVL", ZMQ_HEARTBEAT_IVL, OPT_INT},
    {"HEARTBEAT_TTL", ZMQ_HEARTBEAT_TTL, OPT_INT},
    {"HEARTBEAT_TIMEOUT", ZMQ_HEARTBEAT_TIMEOUT, OPT_INT},
    {"HANDSHAKE_IVL", ZMQ_HANDSHAKE_IVL, OPT_INT},
    {"CONNECT_TIMEOUT", ZMQ_CONNECT_TIMEOUT, OPT_INT},
    {"BACKLOG", ZMQ_BACKLOG, OPT_INT},
    {"MAXMSGSIZE", ZMQ_MAXMSGSIZE, OPT_INT64},
    {"SNDBUF", ZMQ_SNDBUF, OPT_INT},
    {"RCVBUF", ZMQ_RCVBUF, OPT_INT},
    {"TCP_KEEPALIVE", ZMQ_TCP_KEEPALIVE, OPT_INT},
    {"TCP_KEEPALIVE_CNT", ZMQ_TCP_KEEPALIVE_CNT, OPT_INT},
    {"TCP_KEEPALIVE_IDLE", ZMQ_TCP_KEEPALIVE_IDLE, OPT_INT},
    {"TCP_KEEPALIVE_INTVL", ZMQ_TCP_KEEPALIVE_INTVL, OPT_INT},
    {"TCP_MAXRT", ZMQ_TCP_MAXRT, OPT_INT},
    {"IPV6", ZMQ_IPV6, OPT_INT},
    {"TOS", ZMQ_TOS, OPT_INT},
    /* identities and patterns */
    {"ROUTING_ID", ZMQ_ROUTING_ID, OPT_BIN},
    {"CONNECT_ROUTING_ID", ZMQ_CONNECT_ROUTING_ID, OPT_BIN},
    {"ROUTER_MANDATORY", ZMQ_ROUTER_MANDATORY, OPT_INT},
    {"ROUTER_HANDOVER", ZMQ_ROUTER_HANDOVER, OPT_INT},
    {"ROUTER_RAW", ZMQ_ROUTER_RAW, OPT_INT},
    {"PROBE_ROUTER", ZMQ_PROBE_ROUTER, OPT_INT},
    {"REQ_CORRELATE", ZMQ_REQ_CORRELATE, OPT_INT},
    {"REQ_RELAXED", ZMQ_REQ_RELAXED, OPT_INT},
    {"CONFLATE", ZMQ_CONFLATE, OPT_INT},
    {"STREAM_NOTIFY", ZMQ_STREAM_NOTIFY, OPT_INT},
    /* pub/sub */
    {"SUBSCRIBE", ZMQ_SUBSCRIBE, OPT_BIN},
    {"UNSUBSCRIBE", ZMQ_UNSUBSCRIBE, OPT_BIN},
    {"XPUB_VERBOSE", ZMQ_XPUB_VERBOSE, OPT_INT},
    {"XPUB_VERBOSER", ZMQ_XPUB_VERBOSER, OPT_INT},
    {"XPUB_MANUAL", ZMQ_XPUB_MANUAL, OPT_INT},
    {"XPUB_WELCOME_MSG", ZMQ_XPUB_WELCOME_MSG, OPT_BIN},
    {"XPUB_NODROP", ZMQ_XPUB_NODROP, OPT_INT},
    {"INVERT_MATCHING", ZMQ_INVERT_MATCHING, OPT_INT},
    /* security */
    {"CURVE_SERVER", ZMQ_CURVE_SERVER, OPT_INT},
    {"CURVE_PUBLICKEY", ZMQ_CURVE_PUBLICKEY, OPT_KEY},
    {"CURVE_SECRETKEY", ZMQ_CURVE_SECRETKEY, OPT_KEY},
    {"CURVE_SERVERKEY", ZMQ_CURVE_SERVERKEY, OPT_KEY},
    {"PLAIN_SERVER", ZMQ_PLAIN_SERVER, OPT_INT},
    {"PLAIN_USERNAME", ZMQ_PLAIN_USERNAME, OPT_STR},
    {"PLAIN_PASSWORD", ZMQ_PLAIN_PASSWORD, OPT_STR},
    {"ZAP_DOMAIN", ZMQ_ZAP_DOMAIN, OPT_STR},
    {"MECHANISM", ZMQ_MECHANISM, OPT_INT},
    /* Draft options, by number because zmq.h hides them without
     * ZMQ_BUILD_DRAFT_API.  libzmq answers EINVAL for any it doesn't know
     * (4.3.4 has none of the 4.3.5 additions, 110 and up). */
    {"ZAP_ENFORCE_DOMAIN", 93, OPT_INT},
    {"ROUTER_NOTIFY", 97, OPT_INT},
    {"IN_BATCH_SIZE", 101, OPT_INT},
    {"OUT_BATCH_SIZE", 102, OPT_INT},
    {"ONLY_FIRST_SUBSCRIBE", 108, OPT_INT},
    {"RECONNECT_STOP", 109, OPT_INT},
    {"HELLO_MSG", 110, OPT_BIN},
    {"DISCONNECT_MSG", 111, OPT_BIN},
    {"HICCUP_MSG", 114, OPT_BIN},
    {"XSUB_VERBOSE_UNSUBSCRIBE", 115, OPT_INT},
    /* read-only */
    {"TYPE", ZMQ_TYPE, OPT_INT},
    {"EVENTS", ZMQ_EVENTS, OPT_INT},
    {"RCVMORE", ZMQ_RCVMORE, OPT_INT},
    {"LAST_ENDPOINT", ZMQ_LAST_ENDPOINT, OPT_ENDPOINT},
    {NULL, 0, OPT_INT},
};

static const option_t *find_option(const char *name)
{
    for (const option_t *o = options; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

static const named_t event_names[] = {
    {"CONNECTED", ZMQ_EVENT_CONNECTED},
    {"CONNECT_DELAYED", ZMQ_EVENT_CONNECT_DELAYED},
    {"CONNECT_RETRIED", ZMQ_EVENT_CONNECT_RETRIED},
    {"LISTENING", ZMQ_EVENT_LISTENING},
    {"BIND_FAILED", ZMQ_EVENT_BIND_FAILED},
    {"ACCEPTED", ZMQ_EVENT_ACCEPTED},
    {"ACCEPT_FAILED", ZMQ_EVENT_ACCEPT_FAILED},
    {"CLOSED", ZMQ_EVENT_CLOSED},
    {"CLOSE_FAILED", ZMQ_EVENT_CLOSE_FAILED},
    {"DISCONNECTED", ZMQ_EVENT_DISCONNECTED},
    {"MONITOR_STOPPED", ZMQ_EVENT_MONITOR_STOPPED},
    {"HANDSHAKE_FAILED_NO_DETAIL", ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL},
    {"HANDSHAKE_SUCCEEDED", ZMQ_EVENT_HANDSHAKE_SUCCEEDED},
    {"HANDSHAKE_FAILED_PROTOCOL", ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL},
    {"HANDSHAKE_FAILED_AUTH", ZMQ_EVENT_HANDSHAKE_FAILED_AUTH},
    {NULL, 0},
};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Forgets the socket file of `endpoint` (an unbind removed it), or every one with NULL. */
static void forget_ipc_files(int id, const char *endpoint, int unlink_them)
{
    for (int i = 0; i < MAX_IPC_FILES; i++) {
        char *f = g_slots[id].ipc_files[i];
        if (!f || (endpoint && strcmp(endpoint + 6, f) != 0))
            continue;
        if (unlink_them)
            unlink(f);
        free(f);
        g_slots[id].ipc_files[i] = NULL;
    }
}

static void remember_ipc_file(int id, const char *endpoint)
{
    /* A path, not an abstract name (`ipc://@name` leaves no file). */
    if (strncmp(endpoint, "ipc://", 6) != 0 || endpoint[6] == '@' || endpoint[6] == '\0')
        return;
    for (int i = 0; i < MAX_IPC_FILES; i++) {
        if (!g_slots[id].ipc_files[i]) {
            g_slots[id].ipc_files[i] = strdup(endpoint + 6);
            return;
        }
    }
}

static void close_slot(int id)
{
    if (g_slots[id].sock) {
        int zero = 0;
        zmq_setsockopt(g_slots[id].sock, ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(g_slots[id].sock);
        g_slots[id].sock = NULL;
    }
    forget_ipc_files(id, NULL, 1);
}

static void close_monitor(int id)
{
    if (g_slots[id].mon) {
        int zero = 0;
        zmq_setsockopt(g_slots[id].mon, ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(g_slots[id].mon);
        g_slots[id].mon = NULL;
    }
}

/* Waits up to timeout_ms for `sock` to be readable.  1 = readable,
 * 0 = timed out, -1 = zmq error. */
static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* zmq_poll may return before its timeout with nothing readable, when the socket's
 * signalling descriptor fires for internal work (a ZAP exchange, a pipe being attached):
 * poll again for what is left of the timeout. */
static int wait_readable(void *sock, long timeout_ms)
{
    long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
        long left = deadline < 0 ? -1 : (long) (deadline - now_ms());
        if (deadline >= 0 && left < 0)
            left = 0;
        int rc = zmq_poll(&item, 1, left);
        if (rc < 0) {
            if (zmq_errno() == EINTR)
                continue;
            return -1;
        }
        if (item.revents & ZMQ_POLLIN)
            return 1;
        if (deadline >= 0 && now_ms() >= deadline)
            return 0;
    }
}

/* Receives one whole multipart message and writes " PART PART ..." to
 * stdout (no newline), preceded by `meta` handling for recvmeta.  Returns 0
 * on success; on failure nothing has been written and zmq_errno() is set. */
static int recv_and_print(void *sock, long timeout_ms, const char *meta_prop)
{
    int ready = wait_readable(sock, timeout_ms);
    if (ready < 0) return -1;
    if (ready == 0) {
        errno = EAGAIN;
        return -1;
    }

    /* Collect every part first so an error mid-way can't leave a half line. */
    size_t cap = MAX_TOKENS_HINT, n = 0;
    zmq_msg_t *parts = malloc(cap * sizeof *parts);
    if (!parts) {
        errno = ENOMEM;
        return -1;
    }
    int more = 1;
    while (more) {
        if (n == cap) {
            zmq_msg_t *bigger = realloc(parts, 2 * cap * sizeof *parts);
            if (!bigger) {
                for (size_t i = 0; i < n; i++) zmq_msg_close(&parts[i]);
                free(parts);
                errno = ENOMEM;
                return -1;
            }
            parts = bigger;
            cap *= 2;
        }
        zmq_msg_init(&parts[n]);
        /* The first part was announced by poll; the rest of a multipart
         * message arrives atomically with it. */
        if (zmq_msg_recv(&parts[n], sock, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            int e = zmq_errno();
            for (size_t i = 0; i <= n; i++) zmq_msg_close(&parts[i]);
            free(parts);
            errno = e;
            return -1;
        }
        more = zmq_msg_more(&parts[n]);
        n++;
    }

    fputs("ok", stdout);
    if (meta_prop) {
        const char *v = zmq_msg_gets(&parts[0], meta_prop);
        fputc(' ', stdout);
        if (!v) {
            fputc('-', stdout);
        } else {
            int plain = 1;
            for (const char *p = v; *p; p++)
                if (*p <= ' ' || *p >= 0x7f) plain = 0;
            if (plain)
                printf("str:%s", v);
            else
                put_hex((const unsigned char *) v, strlen(v));
        }
    }
    for (size_t i = 0; i < n; i++) {
        fputc(' ', stdout);
        put_hex(zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i]));
        zmq_msg_close(&parts[i]);
    }
    free(parts);
    fputc('\n', stdout);
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                  */

/* argv[0] is the command name; argc counts it. */
typedef void (*cmd_fn)(int argc, char **argv);

static void print_version_line(const char *prefix)
{
    int major, minor, patch;
    zmq_version(&major, &minor, &patch);
    reply_line("%s libzmq %d.%d.%d curve=%d", prefix, major, minor, patch,
               zmq_has("curve") ? 1 : 0);
}

static void cmd_version(int argc, char **argv)
{
    (void) argc;
    (void) argv;
    print_version_line("ok");
}

static void cmd_socket(int argc, char **argv)
{
    (void) argc;
    int id = parse_id(argv[1]);
    if (id < 0) return;
    if (g_slots[id].sock) {
        reply_inval("socket id %d already in use (close it first)", id);
        return;
    }
    const named_t *t = socket_types;
    while (t->name && strcmp(t->name, argv[2]) != 0) t++;
    if (!t->name) {
        reply_inval("unknown socket type '%s'", argv[2]);
        return;
    }
    void *s = zmq_socket(g_ctx, t->value);
    if (!s) {
        reply_zmq_err();
        return;
    }
    close_monitor(id); /* left over from a previous socket with this id */
    g_slots[id].sock = s;
    reply_line("ok");
}

static void cmd_setsockopt(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    const option_t *o = find_option(argv[2]);
    if (!o) {
        reply_inval("unknown socket option '%s'", argv[2]);
        return;
    }
    int rc;
    switch (o->kind) {
    case OPT_INT: {
        long long v;
        if (parse_i64(argv[3], INT_MIN, INT_MAX, &v) != 0) {
            reply_inval("option %s wants a decimal int, got '%s'", o->name, argv[3]);
            return;
        }
        int iv = (int) v;
        rc = zmq_setsockopt(g_slots[id].sock, o->value, &iv, sizeof iv);
        break;
    }
    case OPT_INT64: {
        long long v;
        if (parse_i64(argv[3], INT64_MIN, INT64_MAX, &v) != 0) {
            reply_inval("option %s wants a decimal int64, got '%s'", o->name, argv[3]);
            return;
        }
        int64_t iv = (int64_t) v;
        rc = zmq_setsockopt(g_slots[id].sock, o->value, &iv, sizeof iv);
        break;
    }
    case OPT_BIN:
    case OPT_STR:
    case OPT_KEY: {
        blob_t b;
        if (parse_blob(argv[3], &b) != 0) {
            reply_inval("option %s wants hex, -, str:TEXT or null, got '%s'", o->name,
                        argv[3]);
            return;
        }
        rc = zmq_setsockopt(g_slots[id].sock, o->value, b.data, b.len);
        free(b.data);
        break;
    }
    default:
        reply_inval("option %s is read-only", o->name);
        return;
    }
    if (rc != 0)
        reply_zmq_err();
    else
        reply_line("ok");
}

static void cmd_getsockopt(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    const option_t *o = find_option(argv[2]);
    if (!o) {
        reply_inval("unknown socket option '%s'", argv[2]);
        return;
    }
    void *s = g_slots[id].sock;
    switch (o->kind) {
    case OPT_INT: {
        int v = 0;
        size_t len = sizeof v;
        if (zmq_getsockopt(s, o->value, &v, &len) != 0) {
            reply_zmq_err();
            return;
        }
        reply_line("ok %d", v);
        return;
    }
    case OPT_INT64: {
        int64_t v = 0;
        size_t len = sizeof v;
        if (zmq_getsockopt(s, o->value, &v, &len) != 0) {
            reply_zmq_err();
            return;
        }
        reply_line("ok %lld", (long long) v);
        return;
    }
    case OPT_BIN:
    case OPT_STR:
    case OPT_KEY:
    case OPT_ENDPOINT: {
        unsigned char buf[4096];
        /* libzmq returns CURVE keys as Z85 when asked for 41 bytes. */
        size_t len = o->kind == OPT_KEY ? 41 : sizeof buf;
        if (zmq_getsockopt(s, o->value, buf, &len) != 0) {
            reply_zmq_err();
            return;
        }
        if (o->kind != OPT_BIN) {
            /* libzmq includes the terminating NUL in string lengths. */
            if (len > 0 && buf[len - 1] == '\0') len--;
            buf[len < sizeof buf ? len : sizeof buf - 1] = '\0';
            if (len == 0)
                reply_line("ok -");
            else
                reply_line(o->kind == OPT_ENDPOINT ? "ok %s" : "ok str:%s", (char *) buf);
            return;
        }
        fputs("ok ", stdout);
        put_hex(buf, len);
        fputc('\n', stdout);
        fflush(stdout);
        return;
    }
    }
}

static void cmd_bind(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    if (zmq_bind(g_slots[id].sock, argv[2]) != 0) {
        reply_zmq_err();
        return;
    }
    char buf[1024];
    size_t len = sizeof buf;
    if (zmq_getsockopt(g_slots[id].sock, ZMQ_LAST_ENDPOINT, buf, &len) != 0) {
        reply_zmq_err();
        return;
    }
    buf[sizeof buf - 1] = '\0';
    remember_ipc_file(id, buf);
    reply_line("ok %s", buf);
}

static void endpoint_op(char **argv, int (*op)(void *, const char *))
{
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    if (op(g_slots[id].sock, argv[2]) != 0)
        reply_zmq_err();
    else
        reply_line("ok");
}

static void cmd_connect(int argc, char **argv)
{
    (void) argc;
    endpoint_op(argv, zmq_connect);
}

static void cmd_unbind(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    if (zmq_unbind(g_slots[id].sock, argv[2]) != 0) {
        reply_zmq_err();
        return;
    }
    /* libzmq removed the file itself; a later socket may bind the same path. */
    forget_ipc_files(id, argv[2], 0);
    reply_line("ok");
}

static void cmd_disconnect(int argc, char **argv)
{
    (void) argc;
    endpoint_op(argv, zmq_disconnect);
}

static void cmd_send(int argc, char **argv)
{
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    int first = 2, flags = 0;
    if (argc > 2 && strcmp(argv[2], "dontwait") == 0) {
        flags = ZMQ_DONTWAIT;
        first = 3;
    }
    int nparts = argc - first;
    if (nparts < 1) {
        reply_inval("send needs at least one part (use - for an empty part)");
        return;
    }
    /* Decode everything before sending anything: a malformed part must not
     * leave a half-sent multipart message behind. */
    blob_t *parts = calloc((size_t) nparts, sizeof *parts);
    if (!parts) {
        reply_inval("out of memory");
        return;
    }
    for (int i = 0; i < nparts; i++) {
        if (parse_blob(argv[first + i], &parts[i]) != 0 || !parts[i].data) {
            reply_inval("part %d is not hex, - or str:TEXT: '%s'", i, argv[first + i]);
            for (int j = 0; j < i; j++) free(parts[j].data);
            free(parts);
            return;
        }
    }
    int failed = 0;
    for (int i = 0; i < nparts; i++) {
        int f = flags | (i + 1 < nparts ? ZMQ_SNDMORE : 0);
        if (!failed && zmq_send(g_slots[id].sock, parts[i].data, parts[i].len, f) < 0)
            failed = 1;
    }
    if (failed)
        reply_zmq_err();
    else
        reply_line("ok");
    for (int i = 0; i < nparts; i++) free(parts[i].data);
    free(parts);
}

static void cmd_recv(int argc, char **argv)
{
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    long timeout;
    if (parse_timeout(argv[2], &timeout) != 0) return;
    const char *prop = NULL;
    if (strcmp(argv[0], "recvmeta") == 0) {
        if (argc < 4) {
            reply_inval("usage: recvmeta ID TIMEOUT_MS PROPERTY");
            return;
        }
        prop = argv[3];
    }
    if (recv_and_print(g_slots[id].sock, timeout, prop) != 0)
        reply_zmq_err();
}

static void cmd_monitor(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    if (g_slots[id].mon) {
        reply_inval("socket %d is already monitored", id);
        return;
    }
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://monitor-%d", id);
    if (zmq_socket_monitor(g_slots[id].sock, ep, ZMQ_EVENT_ALL) != 0) {
        reply_zmq_err();
        return;
    }
    void *pair = zmq_socket(g_ctx, ZMQ_PAIR);
    if (!pair) {
        reply_zmq_err();
        return;
    }
    if (zmq_connect(pair, ep) != 0) {
        int e = zmq_errno();
        zmq_close(pair);
        errno = e;
        reply_zmq_err();
        return;
    }
    g_slots[id].mon = pair;
    reply_line("ok");
}

static void cmd_event(int argc, char **argv)
{
    (void) argc;
    int id = parse_id(argv[1]);
    if (id < 0) return;
    if (!g_slots[id].mon) {
        reply_inval("socket %d is not monitored (send 'monitor %d' first)", id, id);
        return;
    }
    long timeout;
    if (parse_timeout(argv[2], &timeout) != 0) return;
    void *mon = g_slots[id].mon;
    int ready = wait_readable(mon, timeout);
    if (ready < 0) {
        reply_zmq_err();
        return;
    }
    if (ready == 0) {
        errno = EAGAIN;
        reply_zmq_err();
        return;
    }
    /* Frame 1: u16 event + u32 value (native endian); frame 2: endpoint. */
    zmq_msg_t head, addr;
    zmq_msg_init(&head);
    zmq_msg_init(&addr);
    if (zmq_msg_recv(&head, mon, ZMQ_DONTWAIT) < 0) {
        reply_zmq_err();
        zmq_msg_close(&head);
        zmq_msg_close(&addr);
        return;
    }
    if (!zmq_msg_more(&head) || zmq_msg_size(&head) != 6) {
        reply_inval("malformed monitor event (%zu bytes)", zmq_msg_size(&head));
        zmq_msg_close(&head);
        zmq_msg_close(&addr);
        return;
    }
    if (zmq_msg_recv(&addr, mon, 0) < 0) {
        reply_zmq_err();
        zmq_msg_close(&head);
        zmq_msg_close(&addr);
        return;
    }
    const unsigned char *d = zmq_msg_data(&head);
    uint16_t ev;
    uint32_t value;
    memcpy(&ev, d, sizeof ev);
    memcpy(&value, d + 2, sizeof value);

    const named_t *n = event_names;
    while (n->name && n->value != ev) n++;
    char unknown[32];
    const char *name = n->name;
    if (!name) {
        snprintf(unknown, sizeof unknown, "UNKNOWN_0x%04x", ev);
        name = unknown;
    }
    size_t alen = zmq_msg_size(&addr);
    const char *a = zmq_msg_data(&addr);
    if (alen == 0)
        reply_line("ok %s %lu -", name, (unsigned long) value);
    else
        reply_line("ok %s %lu %.*s", name, (unsigned long) value, (int) alen, a);
    zmq_msg_close(&head);
    zmq_msg_close(&addr);
}

static void cmd_close(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    /* Keep the monitor PAIR so the final events (CLOSED, MONITOR_STOPPED)
     * can still be read; it is dropped when the id is reused or at exit. */
    close_slot(id);
    reply_line("ok");
}

static void cmd_sleep(int argc, char **argv)
{
    (void) argc;
    long long ms;
    if (parse_i64(argv[1], 0, 3600 * 1000, &ms) != 0) {
        reply_inval("bad sleep duration '%s' (want ms)", argv[1]);
        return;
    }
    struct timespec ts = {(time_t) (ms / 1000), (long) (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    reply_line("ok");
}

/* A ZAP handler (spec 27) on inproc://zeromq.zap.01, in a thread of its own: libzmq's
 * I/O thread waits for ZAP replies while the main thread sits in fgets.
 *   zap_start allow | deny | plain USER PASS | curve Z85KEY
 * Accepted peers get the User-Id "zap-user". */
static pthread_t g_zap_thread;
static int g_zap_started;
static char g_zap_mode[16];
static char g_zap_arg1[256];
static char g_zap_arg2[256];

static int zap_recv_part(void *s, char *buf, size_t cap, size_t *len, int *more)
{
    int n = zmq_recv(s, buf, cap, 0);
    if (n < 0)
        return -1;
    *len = (size_t) n < cap ? (size_t) n : cap;
    int m = 0;
    size_t sz = sizeof m;
    zmq_getsockopt(s, ZMQ_RCVMORE, &m, &sz);
    *more = m;
    return 0;
}

static void *zap_loop(void *arg)
{
    void *rep = arg;
    for (;;) {
        char parts[10][512];
        size_t lens[10];
        int nparts = 0, more = 1;
        while (more) {
            char scratch[512];
            size_t len;
            char *dst = nparts < 10 ? parts[nparts] : scratch;
            if (zap_recv_part(rep, dst, 512, &len, &more) != 0) {
                zmq_close(rep);
                return NULL;
            }
            if (nparts < 10)
                lens[nparts++] = len;
        }
        /* version, request id, domain, address, identity, mechanism, credentials... */
        int ok = 0;
        if (strcmp(g_zap_mode, "allow") == 0) {
            ok = 1;
        } else if (strcmp(g_zap_mode, "plain") == 0 && nparts >= 8) {
            ok = lens[6] == strlen(g_zap_arg1) && memcmp(parts[6], g_zap_arg1, lens[6]) == 0
                 && lens[7] == strlen(g_zap_arg2) && memcmp(parts[7], g_zap_arg2, lens[7]) == 0;
        } else if (strcmp(g_zap_mode, "curve") == 0 && nparts >= 7 && lens[6] == 32) {
            char z85[41];
            zmq_z85_encode(z85, (const uint8_t *) parts[6], 32);
            ok = strcmp(z85, g_zap_arg1) == 0;
        }
        const char *status = ok ? "200" : "400";
        const char *text = ok ? "OK" : "denied";
        const char *user = ok ? "zap-user" : "";
        zmq_send(rep, "1.0", 3, ZMQ_SNDMORE);
        zmq_send(rep, parts[1], nparts > 1 ? lens[1] : 0, ZMQ_SNDMORE);
        zmq_send(rep, status, 3, ZMQ_SNDMORE);
        zmq_send(rep, text, strlen(text), ZMQ_SNDMORE);
        zmq_send(rep, user, strlen(user), ZMQ_SNDMORE);
        zmq_send(rep, "", 0, 0);
    }
}

static void cmd_zap_start(int argc, char **argv)
{
    if (g_zap_started) {
        reply_line("err EINVAL zap handler already running");
        return;
    }
    const char *mode = argv[1];
    int need = strcmp(mode, "plain") == 0 ? 3 : strcmp(mode, "curve") == 0 ? 2 : 1;
    if ((strcmp(mode, "allow") != 0 && strcmp(mode, "deny") != 0 && strcmp(mode, "plain") != 0
         && strcmp(mode, "curve") != 0)
        || argc - 1 != need) {
        reply_inval("usage: zap_start allow | deny | plain USER PASS | curve Z85KEY");
        return;
    }
    snprintf(g_zap_mode, sizeof g_zap_mode, "%s", mode);
    snprintf(g_zap_arg1, sizeof g_zap_arg1, "%s", argc > 2 ? argv[2] : "");
    snprintf(g_zap_arg2, sizeof g_zap_arg2, "%s", argc > 3 ? argv[3] : "");
    void *rep = zmq_socket(g_ctx, ZMQ_REP);
    int zero = 0;
    zmq_setsockopt(rep, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_bind(rep, "inproc://zeromq.zap.01") != 0) {
        reply_zmq_err();
        zmq_close(rep);
        return;
    }
    if (pthread_create(&g_zap_thread, NULL, zap_loop, rep) != 0) {
        reply_line("err EAGAIN cannot start the zap thread");
        zmq_close(rep);
        return;
    }
    pthread_detach(g_zap_thread);
    g_zap_started = 1;
    reply_line("ok");
}

static int g_exit_requested;

static void cmd_exit(int argc, char **argv)
{
    (void) argc;
    (void) argv;
    reply_line("ok");
    g_exit_requested = 1;
}

#ifdef ZMQ_BUILD_DRAFT_API
/* Draft sockets are thread-safe ones: receive with RCVTIMEO rather than zmq_poll. */
static void cmd_sendx(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    long long rid;
    if (parse_i64(argv[2], 0, 4294967295LL, &rid) != 0) return;
    blob_t group = {0}, body = {0};
    int has_group = strcmp(argv[3], "-") != 0;
    if (has_group && (parse_blob(argv[3], &group) != 0 || !group.data)) {
        reply_inval("bad group '%s'", argv[3]);
        return;
    }
    if (parse_blob(argv[4], &body) != 0 || !body.data) {
        free(group.data);
        reply_inval("bad part '%s'", argv[4]);
        return;
    }
    zmq_msg_t msg;
    zmq_msg_init_size(&msg, body.len);
    memcpy(zmq_msg_data(&msg), body.data, body.len);
    int rc = 0;
    if (rid)
        rc = zmq_msg_set_routing_id(&msg, (uint32_t) rid);
    char name[256];
    if (rc == 0 && has_group) {
        size_t n = group.len < sizeof name - 1 ? group.len : sizeof name - 1;
        memcpy(name, group.data, n);
        name[n] = 0;
        rc = zmq_msg_set_group(&msg, name);
    }
    if (rc == 0)
        rc = zmq_msg_send(&msg, g_slots[id].sock, 0) < 0 ? -1 : 0;
    if (rc != 0) {
        zmq_msg_close(&msg);
        reply_zmq_err();
    } else {
        reply_line("ok");
    }
    free(group.data);
    free(body.data);
}

static void cmd_recvx(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    long timeout;
    if (parse_timeout(argv[2], &timeout) != 0) return;
    int t = (int) timeout;
    zmq_setsockopt(g_slots[id].sock, ZMQ_RCVTIMEO, &t, sizeof t);
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, g_slots[id].sock, 0) < 0) {
        zmq_msg_close(&msg);
        reply_zmq_err();
        return;
    }
    printf("ok %u ", zmq_msg_routing_id(&msg));
    const char *group = zmq_msg_group(&msg);
    if (group && *group)
        put_hex((const unsigned char *) group, strlen(group));
    else
        fputc('-', stdout);
    fputc(' ', stdout);
    put_hex(zmq_msg_data(&msg), zmq_msg_size(&msg));
    fputc('\n', stdout);
    fflush(stdout);
    zmq_msg_close(&msg);
}

static void cmd_connectpeer(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    uint32_t rid = zmq_connect_peer(g_slots[id].sock, argv[2]);
    if (rid == 0)
        reply_zmq_err();
    else
        reply_line("ok %u", rid);
}

static void cmd_join(int argc, char **argv)
{
    (void) argc;
    int id = parse_live_id(argv[1]);
    if (id < 0) return;
    blob_t group = {0};
    if (parse_blob(argv[2], &group) != 0 || !group.data) {
        reply_inval("bad group '%s'", argv[2]);
        return;
    }
    char name[256];
    size_t n = group.len < sizeof name - 1 ? group.len : sizeof name - 1;
    memcpy(name, group.data, n);
    name[n] = 0;
    free(group.data);
    int rc = strcmp(argv[0], "join") == 0 ? zmq_join(g_slots[id].sock, name)
                                          : zmq_leave(g_slots[id].sock, name);
    if (rc != 0)
        reply_zmq_err();
    else
        reply_line("ok");
}
#endif

typedef struct {
    const char *name;
    int min_args; /* excluding the command name */
    int max_args; /* -1: unlimited */
    const char *usage;
    cmd_fn fn;
} command_t;

static const command_t commands[] = {
    {"version", 0, 0, "version", cmd_version},
    {"socket", 2, 2, "socket ID TYPE", cmd_socket},
    {"setsockopt", 3, 3, "setsockopt ID NAME VALUE", cmd_setsockopt},
    {"getsockopt", 2, 2, "getsockopt ID NAME", cmd_getsockopt},
    {"bind", 2, 2, "bind ID ENDPOINT", cmd_bind},
    {"connect", 2, 2, "connect ID ENDPOINT", cmd_connect},
    {"unbind", 2, 2, "unbind ID ENDPOINT", cmd_unbind},
    {"disconnect", 2, 2, "disconnect ID ENDPOINT", cmd_disconnect},
    {"send", 2, -1, "send ID [dontwait] PART [PART...]", cmd_send},
    {"recv", 2, 2, "recv ID TIMEOUT_MS", cmd_recv},
    {"recvmeta", 3, 3, "recvmeta ID TIMEOUT_MS PROPERTY", cmd_recv},
    {"monitor", 1, 1, "monitor ID", cmd_monitor},
    {"event", 2, 2, "event ID TIMEOUT_MS", cmd_event},
    {"close", 1, 1, "close ID", cmd_close},
    {"sleep", 1, 1, "sleep MS", cmd_sleep},
    {"zap_start", 1, 3, "zap_start allow|deny|plain USER PASS|curve Z85KEY", cmd_zap_start},
    {"exit", 0, 0, "exit", cmd_exit},
#ifdef ZMQ_BUILD_DRAFT_API
    {"sendx", 4, 4, "sendx ID RID GROUP PART", cmd_sendx},
    {"recvx", 2, 2, "recvx ID TIMEOUT_MS", cmd_recvx},
    {"connectpeer", 2, 2, "connectpeer ID ENDPOINT", cmd_connectpeer},
    {"join", 2, 2, "join ID GROUP", cmd_join},
    {"leave", 2, 2, "leave ID GROUP", cmd_join},
#endif
    {NULL, 0, 0, NULL, NULL},
};

/* ------------------------------------------------------------------------ */
/* Main loop                                                                 */

static void dispatch(char *line)
{
    size_t cap = MAX_TOKENS_HINT;
    int argc = 0;
    char **argv = malloc(cap * sizeof *argv);
    if (!argv) {
        reply_inval("out of memory");
        return;
    }
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t\r\n", &save); tok;
         tok = strtok_r(NULL, " \t\r\n", &save)) {
        if ((size_t) argc + 1 >= cap) {
            char **bigger = realloc(argv, 2 * cap * sizeof *argv);
            if (!bigger) {
                free(argv);
                reply_inval("out of memory");
                return;
            }
            argv = bigger;
            cap *= 2;
        }
        argv[argc++] = tok;
    }
    argv[argc] = NULL;

    if (argc == 0) {
        reply_inval("empty command");
    } else {
        const command_t *c = commands;
        while (c->name && strcmp(c->name, argv[0]) != 0) c++;
        if (!c->name) {
            reply_inval("unknown command '%s'", argv[0]);
        } else if (argc - 1 < c->min_args || (c->max_args >= 0 && argc - 1 > c->max_args)) {
            reply_inval("usage: %s", c->usage);
        } else {
            c->fn(argc, argv);
        }
    }
    free(argv);
}

static void shutdown_all(void)
{
    for (int i = 0; i < MAX_SOCKETS; i++) {
        close_slot(i);
        close_monitor(i);
    }
    zmq_ctx_term(g_ctx);
}

int main(void)
{
    g_ctx = zmq_ctx_new();
    if (!g_ctx) {
        fprintf(stdout, "fatal zmq_ctx_new failed: %s\n", zmq_strerror(zmq_errno()));
        fflush(stdout);
        return 1;
    }
    print_version_line("ready");

    char *line = NULL;
    size_t cap = 0;
    while (!g_exit_requested && getline(&line, &cap, stdin) >= 0)
        dispatch(line);
    free(line);

    shutdown_all();
    return 0;
}

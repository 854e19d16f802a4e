/* The floor of the module API (`make profile`, docs/performance.md): the
 * work of EMQ.WCLAIM, EMQ.BCLAIM, EMQ.ENQUEUE and EMQ.COMPLETE on a sound
 * queue, done in plain C through the same API calls the module makes — the
 * same keys opened and typed, the same reads and writes, the same effects
 * replicated, the same checks (the caller's ACL on the prefix, each key's
 * type, a row's state and lane and token, the queue-wide keys whose
 * existence decides a turn) — and nothing else: no damage handling, no
 * figures, no argument grammar beyond what the bench sends. A bench tool,
 * never loaded beside a real queue.
 *
 *   FLOOR.REPLICATE effects|command   as emq.replicate
 *   FLOOR.WCLAIM P lease              K = min(weight, depth, headroom)
 *   FLOOR.BCLAIM P lease              K = depth
 *   FLOOR.ENQUEUE P lane id payload [id payload ...]
 *   FLOOR.COMPLETE P id token
 */
#define REDISMODULE_MAIN
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redismodule.h"

#define MAX_K 64

typedef int (*PrefixCheck)(RedisModuleUser *, const char *, size_t, unsigned int);
static PrefixCheck prefix_check;
static int as_command;
/* Field names and values made once, as the module's words. */
static RedisModuleString *w_state, *w_group, *w_attempts, *w_payload, *w_active, *w_pending, *w_count, *w_zero,
    *w_one, *w_63, *w_left, *w_right, *w_charged;

/* Key names kept between calls, as the module keeps them (a claim opens
 * the same keys every time): `prefix a [b [c]]`, borrowed from the table.
 * Past MAX_NAMES kept, all are dropped and the table starts again, as the
 * module's are (a claim over 20,000 lanes makes a name per lane). */
#define NAMES 8192
#define MAX_NAMES 4096
static struct {
    char *bytes;
    size_t len;
    RedisModuleString *s;
} names[NAMES];
static size_t names_kept;

static void names_drop(void) {
    for (size_t i = 0; i < NAMES; i++)
        if (names[i].s) {
            RedisModule_FreeString(NULL, names[i].s);
            RedisModule_Free(names[i].bytes);
            names[i].s = NULL;
        }
    names_kept = 0;
}

static void join(char *buf, size_t *n, const char *part, size_t len) {
    if (part) memcpy(buf + *n, part, len), *n += len;
}

static RedisModuleString *name(const char *p, size_t plen, const char *a, size_t alen, const char *b, size_t blen,
                               const char *c, size_t clen) {
    char buf[512];
    size_t n = 0;
    join(buf, &n, p, plen), join(buf, &n, a, alen), join(buf, &n, b, blen), join(buf, &n, c, clen);
    unsigned long h = 5381;
    for (size_t i = 0; i < n; i++) h = h * 33 + (unsigned char)buf[i];
    if (names_kept >= MAX_NAMES) names_drop();
    for (size_t i = 0; i < NAMES; i++) {
        size_t at = (h + i) % NAMES;
        if (names[at].s && names[at].len == n && !memcmp(names[at].bytes, buf, n)) return names[at].s;
        if (!names[at].s) {
            names[at].bytes = RedisModule_Alloc(n);
            memcpy(names[at].bytes, buf, n);
            names[at].len = n;
            names[at].s = RedisModule_CreateString(NULL, buf, n);
            names_kept++;
            return names[at].s;
        }
    }
    return NULL; /* never: the table is at most half full */
}

/* A queue's own key names, kept per prefix (the module keeps one set per
 * prefix the same way). */
enum { RING, ACTIVE, GACTIVE, GLIMIT, GWEIGHT, GRATE, GNEXT, PAUSED, WAKE, DONE, META, FIXED };
static const char *fixed[FIXED] = {"ring",  "active", "gactive", "glimit", "gweight",           "grate",
                                   "gnext", "paused", "wake",    "metrics:completed", "meta"};
static struct {
    char p[256];
    size_t plen;
    RedisModuleString *n[FIXED];
} queues[16];
static size_t queues_made;

static RedisModuleString **queue(const char *p, size_t plen) {
    for (size_t i = 0; i < queues_made && i < 16; i++)
        if (queues[i].plen == plen && !memcmp(queues[i].p, p, plen)) return queues[i].n;
    size_t at = queues_made++ % 16;
    /* Made apart from the name table (which may drop its names), as the
     * module keeps a prefix's fixed names in a set of their own. */
    for (int f = 0; f < FIXED; f++) {
        char buf[512];
        size_t n = 0;
        join(buf, &n, p, plen), join(buf, &n, fixed[f], strlen(fixed[f]));
        if (queues_made > 16) RedisModule_FreeString(NULL, queues[at].n[f]);
        queues[at].n[f] = RedisModule_CreateString(NULL, buf, n);
    }
    memcpy(queues[at].p, p, plen), queues[at].plen = plen;
    return queues[at].n;
}

/* A job's row name, made for the call (as the module makes it). */
static RedisModuleString *row_name(RedisModuleCtx *ctx, const char *p, size_t plen, const char *id, size_t ilen) {
    char buf[512];
    memcpy(buf, p, plen), memcpy(buf + plen, "job:", 4), memcpy(buf + plen + 4, id, ilen);
    return RedisModule_CreateString(ctx, buf, plen + 4 + ilen);
}

/* `cmd args…` replicated with one `s` per argument up to 18 (the server
 * sizes its argv from the format), a `v` vector past that. */
static void replicate(RedisModuleCtx *ctx, const char *cmd, RedisModuleString **a, int n) {
    static const char esses[] = "ssssssssssssssssss";
    const char *fmt = n <= 18 ? esses + (18 - n) : "v";
#define R(...) RedisModule_Replicate(ctx, cmd, fmt, __VA_ARGS__)
    switch (n) {
    case 1: R(a[0]); break;
    case 2: R(a[0], a[1]); break;
    case 3: R(a[0], a[1], a[2]); break;
    case 4: R(a[0], a[1], a[2], a[3]); break;
    case 5: R(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: R(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: R(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 9: R(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 17:
        R(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15],
          a[16]);
        break;
    default: RedisModule_Replicate(ctx, cmd, "v", a, (size_t)n);
    }
#undef R
}

/* The module's guard: the caller's user may access keys under the prefix. */
static int guard(RedisModuleCtx *ctx, const char *p, size_t plen, int write) {
    unsigned long long id = RedisModule_GetClientId(ctx);
    if (id == 0) return 1;
    RedisModuleString *user_name = RedisModule_GetClientUserNameById(ctx, id);
    if (!user_name) return 1;
    RedisModuleUser *user = RedisModule_GetModuleUserFromUserName(user_name);
    int ok = user && prefix_check(user, p, plen,
                                  REDISMODULE_CMD_KEY_ACCESS | (write ? REDISMODULE_CMD_KEY_UPDATE : 0)) ==
                         REDISMODULE_OK;
    if (user) RedisModule_FreeModuleUser(user);
    RedisModule_FreeString(ctx, user_name);
    return ok;
}

/* A key opened for writing that must be of `type` or empty. */
static RedisModuleKey *open_typed(RedisModuleCtx *ctx, RedisModuleString *n, int type) {
    RedisModuleKey *k = RedisModule_OpenKey(ctx, n, REDISMODULE_READ | REDISMODULE_WRITE);
    int t = RedisModule_KeyType(k);
    if (t != type && t != REDISMODULE_KEYTYPE_EMPTY) {
        RedisModule_CloseKey(k);
        return NULL;
    }
    return k;
}

static long long hash_int(RedisModuleKey *k, RedisModuleString *field) {
    RedisModuleString *v = NULL;
    long long n = 0;
    RedisModule_HashGet(k, REDISMODULE_HASH_NONE, field, &v, NULL);
    if (v) {
        RedisModule_StringToLongLong(v, &n);
        RedisModule_FreeString(NULL, v);
    }
    return n;
}

static int refuse(RedisModuleCtx *ctx, const char *why) {
    return RedisModule_ReplyWithError(ctx, why);
}

/* `event` on the key, and `del` when the write emptied it (as the module,
 * and core commands, fire them); a write that only adds fires its event
 * alone. */
static void notify(RedisModuleCtx *ctx, RedisModuleKey *k, int class, const char *event, RedisModuleString *n) {
    RedisModule_NotifyKeyspaceEvent(ctx, class, event, n);
    if (RedisModule_KeyType(k) == REDISMODULE_KEYTYPE_EMPTY)
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "del", n);
}

/* A turn: the ring's head lane rotates, K heads are leased. */
static int claim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int batch) {
    if (argc != 3) return RedisModule_WrongArity(ctx);
    size_t plen;
    const char *p = RedisModule_StringPtrLen(argv[1], &plen);
    long long lease;
    if (RedisModule_StringToLongLong(argv[2], &lease) != REDISMODULE_OK || lease < 1)
        return refuse(ctx, "ERR lease");
    if (!guard(ctx, p, plen, 1)) return refuse(ctx, "NOPERM");
    RedisModuleString **q = queue(p, plen);
    long long now = RedisModule_CachedMicroseconds() / 1000;
    RedisModuleString *ring_n = q[RING];
    RedisModuleString *active_n = q[ACTIVE];
    RedisModuleString *count_n = q[GACTIVE];
    RedisModuleKey *ring = open_typed(ctx, ring_n, REDISMODULE_KEYTYPE_LIST);
    RedisModuleKey *active = open_typed(ctx, active_n, REDISMODULE_KEYTYPE_ZSET);
    RedisModuleKey *counts = open_typed(ctx, count_n, REDISMODULE_KEYTYPE_HASH);
    if (!ring || !active || !counts) return refuse(ctx, "WRONGTYPE");
    /* The queue's settings (paused, fairness) in P meta, then the keys
     * whose existence decides a turn (a weight only for WCLAIM). */
    if (RedisModule_KeyExists(ctx, q[META])) return refuse(ctx, "ERR the floor serves count-fair queues");
    int optional[] = {GLIMIT, GWEIGHT, GRATE, GNEXT, PAUSED};
    int exists[5];
    for (int i = 0; i < 5; i++) exists[i] = (i != 1 || !batch) && RedisModule_KeyExists(ctx, q[optional[i]]);
    RedisModuleString *weight_n = exists[1] ? q[GWEIGHT] : NULL;
    if (exists[2] || exists[3] || exists[4]) return refuse(ctx, "ERR the floor serves no rate or pause");
    /* Expired leases first: the earliest lease is not due. */
    if (RedisModule_ZsetFirstInScoreRange(active, REDISMODULE_NEGATIVE_INFINITE, (double)now, 0, 0) ==
        REDISMODULE_OK) {
        int due = !RedisModule_ZsetRangeEndReached(active);
        RedisModule_ZsetRangeStop(active);
        if (due) return refuse(ctx, "ERR the floor returns no lease");
    }
    RedisModuleString *lane = RedisModule_ListGet(ring, 0);
    if (!lane) return RedisModule_ReplyWithNull(ctx);
    size_t llen;
    const char *l = RedisModule_StringPtrLen(lane, &llen);
    RedisModuleString *pending_n2 = name(p, plen, "g:", 2, l, llen, ":pending", 8);
    RedisModuleKey *pending = open_typed(ctx, pending_n2, REDISMODULE_KEYTYPE_ZSET);
    if (!pending) return refuse(ctx, "WRONGTYPE");
    long long weight = 1;
    if (weight_n) {
        RedisModuleKey *weights = RedisModule_OpenKey(ctx, weight_n, REDISMODULE_READ);
        if (RedisModule_KeyType(weights) != REDISMODULE_KEYTYPE_HASH) return refuse(ctx, "WRONGTYPE");
        weight = hash_int(weights, lane);
        if (weight < 1) weight = 1;
        RedisModule_CloseKey(weights);
    }
    /* The lane's ceiling, when the queue has some: its headroom bounds K,
     * and a lane that reaches it leaves the ring. Only a lane below a
     * positive ceiling (or with none) is served: a lane at its ceiling is
     * refused (the module drops it), a ceiling of 0 or less or not an
     * integer read as none (the module drops or skips the lane); the bench
     * rings neither. */
    long long limit = 0;
    if (exists[0]) {
        RedisModuleKey *limits = open_typed(ctx, q[GLIMIT], REDISMODULE_KEYTYPE_HASH);
        if (!limits) return refuse(ctx, "WRONGTYPE");
        limit = hash_int(limits, lane);
        RedisModule_CloseKey(limits);
    }
    long long count = hash_int(counts, lane);
    long long depth = (long long)RedisModule_ValueLength(pending);
    long long k = batch ? depth : (weight < depth ? weight : depth);
    if (limit > 0) {
        if (count >= limit) return refuse(ctx, "ERR the floor meets no lane at its ceiling");
        if (k > limit - count) k = limit - count;
    }
    if (k > MAX_K) k = MAX_K;
    /* The heads, each row checked: pending and the lane's own. */
    RedisModuleString *ids[MAX_K], *payloads[MAX_K];
    RedisModuleKey *rows[MAX_K];
    RedisModuleString *row_names[MAX_K];
    long long attempts[MAX_K];
    const char *id_bytes[MAX_K];
    size_t id_lens[MAX_K];
    int n = 0;
    RedisModule_ZsetFirstInScoreRange(pending, REDISMODULE_NEGATIVE_INFINITE, REDISMODULE_POSITIVE_INFINITE, 0, 0);
    while (n < k && !RedisModule_ZsetRangeEndReached(pending)) {
        ids[n++] = RedisModule_ZsetRangeCurrentElement(pending, NULL);
        RedisModule_ZsetRangeNext(pending);
    }
    RedisModule_ZsetRangeStop(pending);
    for (int i = 0; i < n; i++) {
        size_t ilen;
        const char *id = RedisModule_StringPtrLen(ids[i], &ilen);
        id_bytes[i] = id, id_lens[i] = ilen;
        row_names[i] = row_name(ctx, p, plen, id, ilen);
        rows[i] = open_typed(ctx, row_names[i], REDISMODULE_KEYTYPE_HASH);
        if (!rows[i]) return refuse(ctx, "WRONGTYPE");
        RedisModuleString *state = NULL, *group = NULL, *tries = NULL;
        RedisModule_HashGet(rows[i], REDISMODULE_HASH_NONE, w_state, &state, w_group, &group, w_attempts, &tries,
                            NULL);
        size_t slen, glen;
        const char *s = state ? RedisModule_StringPtrLen(state, &slen) : "";
        const char *g = group ? RedisModule_StringPtrLen(group, &glen) : "";
        int sound = state && group && slen == 7 && !memcmp(s, "pending", 7) && glen == llen && !memcmp(g, l, llen);
        attempts[i] = 0;
        if (tries) RedisModule_StringToLongLong(tries, &attempts[i]);
        if (state) RedisModule_FreeString(ctx, state);
        if (group) RedisModule_FreeString(ctx, group);
        if (tries) RedisModule_FreeString(ctx, tries);
        if (!sound) return refuse(ctx, "ERR the floor meets no stray");
        payloads[i] = NULL;
        RedisModule_HashGet(rows[i], REDISMODULE_HASH_NONE, w_payload, &payloads[i], NULL);
    }
    int leaves = n == depth || (limit > 0 && count + n >= limit);
    long long deadline = now + lease;
    /* The writes in the module's order, each with its notifications (and
     * `del` when it emptied the key), its effect and its key signalled. */
    RedisModuleString *moved = RedisModule_ListPop(ring, REDISMODULE_LIST_HEAD);
    if (!leaves) RedisModule_ListPush(ring, REDISMODULE_LIST_TAIL, moved);
    RedisModule_FreeString(ctx, moved);
    notify(ctx, ring, REDISMODULE_NOTIFY_LIST, "lpop", ring_n);
    if (!leaves) notify(ctx, ring, REDISMODULE_NOTIFY_LIST, "rpush", ring_n);
    RedisModule_SignalModifiedKey(ctx, ring_n);
    if (!as_command) {
        if (leaves)
            replicate(ctx, "LPOP", &ring_n, 1);
        else
            replicate(ctx, "LMOVE", (RedisModuleString *[]){ring_n, ring_n, w_left, w_right}, 4);
    }
    RedisModuleString *a[1 + 2 * MAX_K];
    for (int i = 0; i < n; i++) RedisModule_ZsetRem(pending, ids[i], NULL);
    notify(ctx, pending, REDISMODULE_NOTIFY_ZSET, "zpopmin", pending_n2);
    RedisModule_SignalModifiedKey(ctx, pending_n2);
    if (!as_command) {
        a[0] = pending_n2;
        for (int i = 0; i < n; i++) a[1 + i] = ids[i];
        replicate(ctx, "ZREM", a, 1 + n);
    }
    RedisModuleString *tokens[MAX_K];
    for (int i = 0; i < n; i++) {
        RedisModuleString *row_n = row_names[i];
        tokens[i] = RedisModule_CreateStringFromLongLong(ctx, attempts[i] + 1);
        RedisModule_HashSet(rows[i], REDISMODULE_HASH_NONE, w_attempts, tokens[i], w_state, w_active, NULL);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", row_n);
        RedisModule_SignalModifiedKey(ctx, row_n);
        if (!as_command) replicate(ctx, "HSET", (RedisModuleString *[]){row_n, w_attempts, tokens[i], w_state, w_active}, 5);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hset", row_n);
    }
    RedisModuleString *deadline_s = RedisModule_CreateStringFromLongLong(ctx, deadline);
    for (int i = 0; i < n; i++) RedisModule_ZsetAdd(active, (double)deadline, ids[i], NULL);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_ZSET, "zadd", active_n);
    RedisModule_SignalModifiedKey(ctx, active_n);
    if (!as_command) {
        a[0] = active_n;
        for (int i = 0; i < n; i++) a[1 + 2 * i] = deadline_s, a[2 + 2 * i] = ids[i];
        replicate(ctx, "ZADD", a, 1 + 2 * n);
    }
    RedisModuleString *count_s = RedisModule_CreateStringFromLongLong(ctx, count + n);
    RedisModule_HashSet(counts, REDISMODULE_HASH_NONE, lane, count_s, NULL);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", count_n);
    RedisModule_SignalModifiedKey(ctx, count_n);
    if (as_command)
        RedisModule_Replicate(ctx, "EMQ.TURN", "sslll", argv[1], lane, deadline, (long long)n, (long long)leaves);
    else
        replicate(ctx, "HSET", (RedisModuleString *[]){count_n, lane, count_s}, 3);
    /* The reply: [[id, payload, attempts, lane], ...], each string as its
     * bytes (cheaper for the server than a string object, as the module
     * sends them). */
    RedisModule_ReplyWithArray(ctx, n);
    for (int i = 0; i < n; i++) {
        RedisModule_ReplyWithArray(ctx, 4);
        RedisModule_ReplyWithStringBuffer(ctx, id_bytes[i], id_lens[i]);
        size_t plen2 = 0;
        const char *payload = payloads[i] ? RedisModule_StringPtrLen(payloads[i], &plen2) : NULL;
        if (payload)
            RedisModule_ReplyWithStringBuffer(ctx, payload, plen2);
        else
            RedisModule_ReplyWithNull(ctx);
        RedisModule_ReplyWithLongLong(ctx, attempts[i] + 1);
        RedisModule_ReplyWithStringBuffer(ctx, l, llen);
        RedisModule_CloseKey(rows[i]);
        RedisModule_FreeString(ctx, ids[i]);
        RedisModule_FreeString(ctx, tokens[i]);
        RedisModule_FreeString(ctx, row_names[i]);
        if (payloads[i]) RedisModule_FreeString(ctx, payloads[i]);
    }
    RedisModule_CloseKey(ring);
    RedisModule_CloseKey(active);
    RedisModule_CloseKey(counts);
    RedisModule_CloseKey(pending);
    RedisModuleString *made[] = {deadline_s, count_s, lane};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) RedisModule_FreeString(ctx, made[i]);
    return REDISMODULE_OK;
}

static int wclaim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return claim(ctx, argv, argc, 0);
}

static int bclaim(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return claim(ctx, argv, argc, 1);
}

/* New rows into the lane's set; the lane rung (and a wake pushed) when its
 * set was empty. */
static int enqueue(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 5 || argc % 2 == 0) return RedisModule_WrongArity(ctx);
    int pairs = (argc - 3) / 2;
    if (pairs > MAX_K) return refuse(ctx, "ERR the floor takes at most 64 pairs");
    size_t plen, llen;
    const char *p = RedisModule_StringPtrLen(argv[1], &plen);
    const char *l = RedisModule_StringPtrLen(argv[2], &llen);
    if (!guard(ctx, p, plen, 1)) return refuse(ctx, "NOPERM");
    RedisModuleString **q = queue(p, plen);
    RedisModuleString *ring_n = q[RING];
    RedisModuleString *wake_n = q[WAKE];
    RedisModuleString *set_n = name(p, plen, "g:", 2, l, llen, ":pending", 8);
    /* The keys a ring join writes, opened before the first write (as the
     * module's), the lane's set and its count. */
    RedisModuleKey *ring = open_typed(ctx, ring_n, REDISMODULE_KEYTYPE_LIST);
    RedisModuleKey *wake = open_typed(ctx, wake_n, REDISMODULE_KEYTYPE_LIST);
    RedisModuleKey *set = open_typed(ctx, set_n, REDISMODULE_KEYTYPE_ZSET);
    RedisModuleKey *counts = open_typed(ctx, q[GACTIVE], REDISMODULE_KEYTYPE_HASH);
    if (!ring || !wake || !set || !counts) return refuse(ctx, "WRONGTYPE");
    if (hash_int(counts, argv[2]) < 0) return refuse(ctx, "ERR the floor serves sound lanes");
    int optional[] = {GLIMIT, GNEXT, PAUSED};
    for (int i = 0; i < 3; i++)
        if (RedisModule_KeyExists(ctx, q[optional[i]])) return refuse(ctx, "ERR the floor serves no limit or pause");
    /* Every row is new: each opened and found empty before the first write. */
    RedisModuleKey *rows[MAX_K];
    RedisModuleString *row_names[MAX_K];
    for (int i = 0; i < pairs; i++) {
        size_t ilen;
        const char *id = RedisModule_StringPtrLen(argv[3 + 2 * i], &ilen);
        row_names[i] = row_name(ctx, p, plen, id, ilen);
        rows[i] = RedisModule_OpenKey(ctx, row_names[i], REDISMODULE_READ | REDISMODULE_WRITE);
        if (RedisModule_KeyType(rows[i]) != REDISMODULE_KEYTYPE_EMPTY) return refuse(ctx, "ERR the floor adds new jobs");
    }
    int rings = RedisModule_ValueLength(set) == 0;
    RedisModuleString *scored[1 + 2 * MAX_K];
    scored[0] = set_n;
    for (int i = 0; i < pairs; i++) {
        RedisModuleString *id = argv[3 + 2 * i], *payload = argv[4 + 2 * i];
        RedisModule_HashSet(rows[i], REDISMODULE_HASH_NONE, w_state, w_pending, w_attempts, w_zero, w_payload, payload,
                            w_group, argv[2], NULL);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hset", row_names[i]);
        RedisModule_SignalModifiedKey(ctx, row_names[i]);
        if (!as_command)
            replicate(ctx, "HSET",
                      (RedisModuleString *[]){row_names[i], w_state, w_pending, w_attempts, w_zero, w_payload, payload,
                                              w_group, argv[2]},
                      9);
        RedisModule_ZsetAdd(set, 0, id, NULL);
        scored[1 + 2 * i] = w_zero, scored[2 + 2 * i] = id;
        RedisModule_CloseKey(rows[i]);
        RedisModule_FreeString(ctx, row_names[i]);
    }
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_ZSET, "zadd", set_n);
    RedisModule_SignalModifiedKey(ctx, set_n);
    if (!as_command) replicate(ctx, "ZADD", scored, 1 + 2 * pairs);
    if (rings) {
        RedisModule_ListPush(ring, REDISMODULE_LIST_TAIL, argv[2]);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_LIST, "rpush", ring_n);
        RedisModule_SignalModifiedKey(ctx, ring_n);
        if (!as_command) replicate(ctx, "RPUSH", (RedisModuleString *[]){ring_n, argv[2]}, 2);
        RedisModule_SignalKeyAsReady(ctx, ring_n);
        RedisModule_ListPush(wake, REDISMODULE_LIST_HEAD, w_one);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_LIST, "lpush", wake_n);
        if (!as_command) replicate(ctx, "LPUSH", (RedisModuleString *[]){wake_n, w_one}, 2);
        if (RedisModule_ValueLength(wake) > 64) RedisModule_ListDelete(wake, -1);
        notify(ctx, wake, REDISMODULE_NOTIFY_LIST, "ltrim", wake_n);
        RedisModule_SignalModifiedKey(ctx, wake_n);
        if (!as_command) replicate(ctx, "LTRIM", (RedisModuleString *[]){wake_n, w_zero, w_63}, 3);
    }
    if (as_command) RedisModule_ReplicateVerbatim(ctx);
    RedisModuleKey *keys[] = {ring, wake, set, counts};
    for (int i = 0; i < 4; i++) RedisModule_CloseKey(keys[i]);
    return RedisModule_ReplyWithLongLong(ctx, pairs);
}

/* A leased job ends: out of P active, its lane's count down, its row gone,
 * the completed count up. */
static int complete(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 4) return RedisModule_WrongArity(ctx);
    size_t plen, ilen;
    const char *p = RedisModule_StringPtrLen(argv[1], &plen);
    const char *id = RedisModule_StringPtrLen(argv[2], &ilen);
    long long token;
    if (RedisModule_StringToLongLong(argv[3], &token) != REDISMODULE_OK) return refuse(ctx, "ERR token");
    if (!guard(ctx, p, plen, 1)) return refuse(ctx, "NOPERM");
    RedisModuleString **q = queue(p, plen);
    RedisModuleString *row_n = row_name(ctx, p, plen, id, ilen);
    RedisModuleString *active_n = q[ACTIVE];
    RedisModuleString *count_n = q[GACTIVE];
    RedisModuleString *done_n = q[DONE];
    RedisModuleKey *row = open_typed(ctx, row_n, REDISMODULE_KEYTYPE_HASH);
    RedisModuleKey *active = open_typed(ctx, active_n, REDISMODULE_KEYTYPE_ZSET);
    RedisModuleKey *counts = open_typed(ctx, count_n, REDISMODULE_KEYTYPE_HASH);
    RedisModuleKey *done = open_typed(ctx, done_n, REDISMODULE_KEYTYPE_HASH);
    if (!row || !active || !counts || !done) return refuse(ctx, "WRONGTYPE");
    RedisModuleString *group = NULL, *tries = NULL, *charged = NULL;
    RedisModule_HashGet(row, REDISMODULE_HASH_NONE, w_group, &group, w_attempts, &tries, w_charged, &charged, NULL);
    if (charged) RedisModule_FreeString(ctx, charged);
    long long attempts = -1;
    if (tries) RedisModule_StringToLongLong(tries, &attempts), RedisModule_FreeString(ctx, tries);
    double score;
    if (!group || attempts != token || RedisModule_ZsetScore(active, argv[2], &score) != REDISMODULE_OK) {
        if (group) RedisModule_FreeString(ctx, group);
        return refuse(ctx, "ERR the floor completes leased jobs");
    }
    /* The lane's ceiling decides whether it rings again: none here. */
    RedisModuleString *limit_n = q[GLIMIT];
    int limited = RedisModule_KeyExists(ctx, limit_n);
    if (limited) return refuse(ctx, "ERR the floor serves no limit");
    /* In the module's order: the lease, the lane's count (its field gone
     * at 0, as HINCRBY then HDEL leave it), the row, the completed count. */
    RedisModule_ZsetRem(active, argv[2], NULL);
    notify(ctx, active, REDISMODULE_NOTIFY_ZSET, "zrem", active_n);
    RedisModule_SignalModifiedKey(ctx, active_n);
    if (!as_command) replicate(ctx, "ZREM", (RedisModuleString *[]){active_n, argv[2]}, 2);
    long long left = hash_int(counts, group) - 1;
    RedisModuleString *count_s = RedisModule_CreateStringFromLongLong(ctx, left);
    if (left > 0) {
        RedisModule_HashSet(counts, REDISMODULE_HASH_NONE, group, count_s, NULL);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", count_n);
        if (!as_command) replicate(ctx, "HSET", (RedisModuleString *[]){count_n, group, count_s}, 3);
    } else {
        RedisModule_HashSet(counts, REDISMODULE_HASH_NONE, group, REDISMODULE_HASH_DELETE, NULL);
        RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", count_n);
        notify(ctx, counts, REDISMODULE_NOTIFY_HASH, "hdel", count_n);
        if (!as_command) replicate(ctx, "HDEL", (RedisModuleString *[]){count_n, group}, 2);
    }
    RedisModule_SignalModifiedKey(ctx, count_n);
    RedisModule_DeleteKey(row);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_GENERIC, "del", row_n);
    RedisModule_SignalModifiedKey(ctx, row_n);
    if (!as_command) replicate(ctx, "DEL", &row_n, 1);
    RedisModuleString *done_s = RedisModule_CreateStringFromLongLong(ctx, hash_int(done, w_count) + 1);
    RedisModule_HashSet(done, REDISMODULE_HASH_NONE, w_count, done_s, NULL);
    RedisModule_NotifyKeyspaceEvent(ctx, REDISMODULE_NOTIFY_HASH, "hincrby", done_n);
    RedisModule_SignalModifiedKey(ctx, done_n);
    if (as_command)
        RedisModule_ReplicateVerbatim(ctx);
    else
        replicate(ctx, "HSET", (RedisModuleString *[]){done_n, w_count, done_s}, 3);
    RedisModuleKey *keys[] = {row, active, counts, done};
    for (int i = 0; i < 4; i++) RedisModule_CloseKey(keys[i]);
    RedisModuleString *made[] = {row_n, group, count_s, done_s};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) RedisModule_FreeString(ctx, made[i]);
    return RedisModule_ReplyWithLongLong(ctx, 1);
}

static int set_mode(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    const char *mode = RedisModule_StringPtrLen(argv[1], NULL);
    as_command = !strcasecmp(mode, "command");
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static RedisModuleString *word(const char *w) {
    return RedisModule_CreateString(NULL, w, strlen(w));
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv, (void)argc;
    if (RedisModule_Init(ctx, "emqfloor", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) return REDISMODULE_ERR;
    if (RedisModule_GetApi("ValkeyModule_ACLCheckKeyPrefixPermissions", (void **)&prefix_check) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    w_state = word("state"), w_group = word("group"), w_attempts = word("attempts"), w_payload = word("payload");
    w_active = word("active"), w_pending = word("pending"), w_count = word("count"), w_zero = word("0");
    w_one = word("1"), w_63 = word("63"), w_left = word("LEFT"), w_right = word("RIGHT"), w_charged = word("charged");
    /* As the module: a key is signalled modified by its writer, not again
     * when its handle closes. */
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
    struct {
        const char *name;
        RedisModuleCmdFunc f;
        const char *flags;
    } commands[] = {
        {"floor.wclaim", wclaim, "write deny-oom"},   {"floor.bclaim", bclaim, "write deny-oom"},
        {"floor.enqueue", enqueue, "write deny-oom"}, {"floor.complete", complete, "write"},
        {"floor.replicate", set_mode, "admin"},
    };
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (RedisModule_CreateCommand(ctx, commands[i].name, commands[i].f, commands[i].flags, 1, 1, 1) ==
            REDISMODULE_ERR)
            return REDISMODULE_ERR;
    return REDISMODULE_OK;
}

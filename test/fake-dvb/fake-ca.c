/* The fake layer's CI CAM behind /dev/dvb/adapterN/caM: a slot with the link layer in the kernel
 * (CA_CI_LINK), whose module answers as a CI CAM does at the TPDU level (EN 50221 annex A:
 * T_SB after every answer, data only on T_RCV) and runs the module's side of the session and
 * application layers: it opens the resource manager, asks the host's profile, opens application
 * information, CA support and (when offered) date-time, answers the enquiries and ca_pmt queries.
 * Scripted by $FAKE_DVB_CAM (words: absent, ready-ms=N, reply-ms=N, refuse=PNR[,PNR],
 * caids=ID[,ID], manufacturer=N, code=N, menu=TEXT with _ for spaces) and, at run time, by the
 * control file: `cam 0` pulls the module out, `cam 1` puts it back, a new `cam-reset N` makes it
 * reset itself. It logs what it receives to $FAKE_DVB_LOG. Called with the layer's lock held. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <linux/dvb/ca.h>

#include "fake-dvb.h"

#define MAX_MSG 1024
#define MAX_QUEUE 16
#define MAX_IDS 8

enum { RM = 0x00010041, AI = 0x00020041, CAS = 0x00030041, DT = 0x00240041 };

struct msg {
  uint8_t b[MAX_MSG];
  int len;
  double at;
};

struct fake_cam {
  int present;
  long long generation;
  double ready_at;
  int tcid;
  struct msg spdu[MAX_QUEUE]; /* what the module wants to send */
  int nspdu;
  struct msg reply[MAX_QUEUE]; /* answers to the host, readable from `at` */
  int nreply;
  int sessions[4]; /* session numbers of RM, AI, CAS, DT; 0 = none */
  /* the script */
  int absent, ready_ms, reply_ms, nrefuse, ncaids, manufacturer, code;
  int refuse[MAX_IDS], caids[MAX_IDS];
  char menu[64];
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int list(const char *v, int *out) {
  int n = 0;
  for (char *end; *v && n < MAX_IDS; v = *end ? end + 1 : end) {
    out[n++] = (int)strtol(v, &end, 0);
    if (end == v) break;
  }
  return n;
}

static void script(struct fake_cam *c) {
  c->ready_ms = 200;
  c->manufacturer = 0x4a20;
  c->code = 0x0101;
  c->caids[0] = 0x0b00, c->ncaids = 1;
  strcpy(c->menu, "Fake CAM");
  const char *env = getenv("FAKE_DVB_CAM");
  char buf[512];
  snprintf(buf, sizeof buf, "%s", env ? env : "");
  char *save = NULL;
  for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    char *v = strchr(w, '=');
    if (v) *v++ = 0;
    if (!strcmp(w, "absent")) c->absent = 1;
    else if (!v) continue;
    else if (!strcmp(w, "ready-ms")) c->ready_ms = atoi(v);
    else if (!strcmp(w, "reply-ms")) c->reply_ms = atoi(v);
    else if (!strcmp(w, "refuse")) c->nrefuse = list(v, c->refuse);
    else if (!strcmp(w, "caids")) c->ncaids = list(v, c->caids);
    else if (!strcmp(w, "manufacturer")) c->manufacturer = (int)strtol(v, NULL, 0);
    else if (!strcmp(w, "code")) c->code = (int)strtol(v, NULL, 0);
    else if (!strcmp(w, "menu")) {
      snprintf(c->menu, sizeof c->menu, "%s", v);
      for (char *p = c->menu; *p; p++)
        if (*p == '_') *p = ' ';
    }
  }
}

/* The module starts over: no connection, no session, nothing queued; ready after ready-ms. */
static void restart(struct fake_cam *c) {
  c->tcid = 0;
  c->nspdu = c->nreply = 0;
  memset(c->sessions, 0, sizeof c->sessions);
  c->ready_at = now() + c->ready_ms / 1000.0;
}

struct fake_cam *fake_cam_new(void) {
  struct fake_cam *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  script(c);
  c->present = !c->absent;
  c->generation = fake_control("cam-reset", 0);
  restart(c);
  return c;
}

void fake_cam_free(struct fake_cam *c) { free(c); }

/* Pull-outs and self-resets the control file asks for. */
static void follow_control(struct fake_cam *c) {
  int present = fake_control("cam", !c->absent) != 0;
  long long gen = fake_control("cam-reset", 0);
  if (present != c->present || gen != c->generation) {
    fake_log("{\"op\":\"cam-%s\"}", !present ? "pulled-out" : present != c->present ? "inserted" : "self-reset");
    restart(c);
  }
  c->present = present;
  c->generation = gen;
}

static int ready(struct fake_cam *c) { return c->present && now() >= c->ready_at; }

/* ---- building what the module sends ---- */

static int put_len(uint8_t *b, int n) {
  if (n < 0x80) return b[0] = (uint8_t)n, 1;
  b[0] = 0x82, b[1] = (uint8_t)(n >> 8), b[2] = (uint8_t)n;
  return 3;
}

static void queue_spdu(struct fake_cam *c, const uint8_t *b, int len) {
  if (c->nspdu >= MAX_QUEUE || len > MAX_MSG - 16) return;
  memcpy(c->spdu[c->nspdu].b, b, len);
  c->spdu[c->nspdu++].len = len;
}

static void open_request(struct fake_cam *c, uint32_t res) {
  uint8_t b[] = {0x91, 4, res >> 24, res >> 16, res >> 8, res};
  queue_spdu(c, b, sizeof b);
}

static void send_apdu(struct fake_cam *c, int session, uint32_t tag, const uint8_t *body, int len) {
  uint8_t b[MAX_MSG];
  int n = 0;
  b[n++] = 0x90, b[n++] = 2, b[n++] = session >> 8, b[n++] = session;
  b[n++] = tag >> 16, b[n++] = tag >> 8, b[n++] = tag;
  n += put_len(b + n, len);
  memcpy(b + n, body, len);
  queue_spdu(c, b, n + len);
}

/* An answer to the host: `tpdu` (may be empty) followed by T_SB. */
static void answer(struct fake_cam *c, int slot, const uint8_t *tpdu, int len) {
  if (c->nreply >= MAX_QUEUE) return;
  struct msg *m = &c->reply[c->nreply++];
  m->b[0] = slot, m->b[1] = c->tcid;
  memcpy(m->b + 2, tpdu, len);
  uint8_t sb[] = {0x80, 2, c->tcid, c->nspdu ? 0x80 : 0x00};
  memcpy(m->b + 2 + len, sb, sizeof sb);
  m->len = 2 + len + sizeof sb;
  m->at = now() + c->reply_ms / 1000.0;
}

/* ---- what the module does with the host's SPDUs ---- */

static int session_of(uint32_t res) {
  return res == RM ? 0 : res == AI ? 1 : res == CAS ? 2 : res == DT ? 3 : -1;
}

static int refused(struct fake_cam *c, int pnr) {
  for (int i = 0; i < c->nrefuse; i++)
    if (c->refuse[i] == pnr) return 1;
  return 0;
}

/* ca_pmt: list management, programme, and the first ca_pmt_cmd_id of its info loops. */
static void ca_pmt(struct fake_cam *c, const uint8_t *b, int len) {
  if (len < 6) return;
  int pnr = (b[1] << 8) | b[2], cmd = 0;
  int info = ((b[4] & 0x0f) << 8) | b[5];
  if (info) cmd = b[6];
  int o = 6 + info;
  int es = 0;
  while (o + 5 <= len) {
    int l = ((b[o + 3] & 0x0f) << 8) | b[o + 4];
    if (!cmd && l) cmd = b[o + 5];
    es++;
    o += 5 + l;
  }
  fake_log("{\"op\":\"cam-ca-pmt\",\"pnr\":%d,\"list\":%d,\"cmd\":%d,\"version\":%d,\"streams\":%d}",
           pnr, b[0], cmd, (b[3] >> 1) & 0x1f, es);
  if (cmd == 3) { /* query: ca_pmt_reply with CA_enable at programme level */
    uint8_t r[] = {pnr >> 8, pnr, b[3], refused(c, pnr) ? 0x80 | 0x71 : 0x80 | 0x01};
    send_apdu(c, c->sessions[2], 0x9f8033, r, sizeof r);
  }
}

static void apdu(struct fake_cam *c, int session, uint32_t tag, const uint8_t *body, int len) {
  fake_log("{\"op\":\"cam-apdu\",\"session\":%d,\"tag\":\"%06x\",\"length\":%d}", session, tag, len);
  if (tag == 0x9f8010) { /* profile_enq: the module has no resources of its own */
    send_apdu(c, session, 0x9f8011, NULL, 0);
  } else if (tag == 0x9f8012) { /* profile_change: ask the host's profile */
    send_apdu(c, session, 0x9f8010, NULL, 0);
  } else if (tag == 0x9f8011) { /* the host's profile: open what it offers */
    int dt = 0;
    for (int o = 0; o + 4 <= len; o += 4)
      dt |= ((uint32_t)body[o] << 24 | body[o + 1] << 16 | body[o + 2] << 8 | body[o + 3]) == DT;
    if (!c->sessions[1]) open_request(c, AI);
    if (!c->sessions[2]) open_request(c, CAS);
    if (dt && !c->sessions[3]) open_request(c, DT);
  } else if (tag == 0x9f8020) { /* application_info_enq */
    uint8_t r[6 + 64];
    int n = (int)strlen(c->menu);
    r[0] = 1, r[1] = c->manufacturer >> 8, r[2] = c->manufacturer, r[3] = c->code >> 8, r[4] = c->code;
    r[5] = n;
    memcpy(r + 6, c->menu, n);
    send_apdu(c, session, 0x9f8021, r, 6 + n);
  } else if (tag == 0x9f8030) { /* ca_info_enq */
    uint8_t r[2 * MAX_IDS];
    for (int i = 0; i < c->ncaids; i++) r[2 * i] = c->caids[i] >> 8, r[2 * i + 1] = c->caids[i];
    send_apdu(c, session, 0x9f8031, r, 2 * c->ncaids);
  } else if (tag == 0x9f8032) {
    ca_pmt(c, body, len);
  } else if (tag == 0x9f8441 && len >= 5) {
    fake_log("{\"op\":\"cam-date-time\",\"mjd\":%d,\"utc\":\"%02x:%02x:%02x\"}", body[0] << 8 | body[1],
             body[2], body[3], body[4]);
  }
}

static int get_len(const uint8_t *b, int avail, int *len) {
  if (avail < 1) return -1;
  if (!(b[0] & 0x80)) return *len = b[0], 1;
  int k = b[0] & 0x7f;
  if (k < 1 || k > 3 || avail < 1 + k) return -1;
  *len = 0;
  for (int i = 0; i < k; i++) *len = (*len << 8) | b[1 + i];
  return 1 + k;
}

static void spdu(struct fake_cam *c, const uint8_t *b, int len) {
  if (len < 2) return;
  int l, h = get_len(b + 1, len - 1, &l);
  if (h < 0 || 1 + h + l > len) return;
  const uint8_t *body = b + 1 + h;
  if (b[0] == 0x92 && l >= 7) { /* open_session_response */
    uint32_t res = (uint32_t)body[1] << 24 | body[2] << 16 | body[3] << 8 | body[4];
    int s = (body[5] << 8) | body[6], k = session_of(res);
    fake_log("{\"op\":\"cam-session\",\"resource\":\"%08x\",\"status\":%d,\"session\":%d}", res, body[0], s);
    if (k >= 0 && body[0] == 0) c->sessions[k] = s;
    if (k == 3 && body[0] == 0) {
      uint8_t interval[] = {0};
      send_apdu(c, s, 0x9f8440, interval, 1);
    }
    return;
  }
  if (b[0] != 0x90 || l < 2) return;
  int session = (body[0] << 8) | body[1];
  for (int o = 1 + h + l; o + 3 < len;) {
    uint32_t tag = (uint32_t)b[o] << 16 | b[o + 1] << 8 | b[o + 2];
    int al, ah = get_len(b + o + 3, len - o - 3, &al);
    if (ah < 0 || o + 3 + ah + al > len) return;
    apdu(c, session, tag, b + o + 3 + ah, al);
    o += 3 + ah + al;
  }
}

/* ---- the device ---- */

int fake_cam_ioctl(struct fake_cam *c, unsigned long req, void *arg) {
  follow_control(c);
  switch (req) {
  case CA_RESET:
    fake_log("{\"op\":\"CA_RESET\",\"slots\":%lu}", (unsigned long)arg);
    restart(c);
    return 0;
  case CA_GET_CAP: {
    struct ca_caps *caps = arg;
    memset(caps, 0, sizeof *caps);
    caps->slot_num = 1;
    caps->slot_type = CA_CI_LINK;
    fake_log("{\"op\":\"CA_GET_CAP\"}");
    return 0;
  }
  case CA_GET_SLOT_INFO: {
    struct ca_slot_info *s = arg;
    if (s->num != 0) return errno = EINVAL, -1;
    s->type = CA_CI_LINK;
    s->flags = (c->present ? CA_CI_MODULE_PRESENT : 0) | (ready(c) ? CA_CI_MODULE_READY : 0);
    return 0;
  }
  }
  fake_log("{\"op\":\"unknown-ca-ioctl\",\"req\":%lu}", req);
  return errno = ENOTTY, -1;
}

ssize_t fake_cam_write(struct fake_cam *c, const uint8_t *b, size_t n) {
  follow_control(c);
  if (!ready(c)) return errno = EIO, -1;
  if (n < 5) return errno = EINVAL, -1;
  int slot = b[0], tag = b[2], l, h = get_len(b + 3, (int)n - 3, &l);
  if (h < 0 || l < 1 || 3 + h + l > (int)n) return errno = EINVAL, -1;
  int tcid = b[3 + h];
  const uint8_t *data = b + 3 + h + 1;
  int dlen = l - 1;
  if (!(tag == 0xa0 && dlen == 0)) { /* every TPDU but the empty poll */
    char hex[3 * 64 + 1] = "";
    int k = 0;
    for (int i = 2; i < (int)n && i < 66; i++) k += snprintf(hex + k, sizeof hex - k, "%s%02x", i > 2 ? " " : "", b[i]);
    fake_log("{\"op\":\"ca-tpdu\",\"slot\":%d,\"tcid\":%d,\"tag\":%d,\"bytes\":\"%s\"}", slot, tcid, tag, hex);
  }
  if (tag == 0x82) { /* create_t_c */
    c->tcid = tcid;
    uint8_t r[] = {0x83, 1, tcid};
    open_request(c, RM);
    answer(c, slot, r, sizeof r);
  } else if (tcid != c->tcid || !c->tcid) {
    uint8_t r[] = {0x77, 1, tcid};
    answer(c, slot, r, sizeof r);
  } else if (tag == 0xa0) { /* data to the module, or a poll */
    if (dlen) spdu(c, data, dlen);
    answer(c, slot, NULL, 0);
  } else if (tag == 0x81 && c->nspdu) { /* T_RCV: the first SPDU waiting */
    struct msg m = c->spdu[0];
    memmove(c->spdu, c->spdu + 1, --c->nspdu * sizeof c->spdu[0]);
    uint8_t r[MAX_MSG];
    int k = 0;
    r[k++] = 0xa0;
    k += put_len(r + k, m.len + 1);
    r[k++] = tcid;
    memcpy(r + k, m.b, m.len);
    answer(c, slot, r, k + m.len);
  } else {
    answer(c, slot, NULL, 0);
  }
  return (ssize_t)n;
}

int fake_cam_readable(struct fake_cam *c) {
  follow_control(c);
  return c->nreply > 0 && now() >= c->reply[0].at;
}

ssize_t fake_cam_read(struct fake_cam *c, uint8_t *buf, size_t count) {
  if (!fake_cam_readable(c)) return 0;
  struct msg m = c->reply[0];
  memmove(c->reply, c->reply + 1, --c->nreply * sizeof c->reply[0]);
  size_t n = (size_t)m.len < count ? (size_t)m.len : count;
  memcpy(buf, m.b, n);
  return (ssize_t)n;
}

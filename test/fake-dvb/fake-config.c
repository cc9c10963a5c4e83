/* The fake DVB device layer's environment: log, control file, transponder table, frontend
 * identity and the adapters that exist. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/dvb/frontend.h>

#include "fake-dvb.h"

static const char DEFAULT_DELSYS[] = "5,6,3,16,1,2,18";

static int raw_open(const char *path, int flags) {
  static int (*o)(const char *, int, ...);
  if (!o) o = dlsym(RTLD_NEXT, "open");
  return o(path, flags, 0644);
}

static int raw_read_file(const char *path, char *buf, size_t size) {
  static ssize_t (*r)(int, void *, size_t);
  static int (*c)(int);
  if (!r) r = dlsym(RTLD_NEXT, "read"), c = dlsym(RTLD_NEXT, "close");
  int fd = path ? raw_open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return -1;
  ssize_t n = r(fd, buf, size - 1);
  c(fd);
  buf[n > 0 ? n : 0] = 0;
  return (int)n;
}

void fake_log(const char *fmt, ...) {
  const char *path = getenv("FAKE_DVB_LOG");
  if (!path) return;
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  int fd = raw_open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC);
  if (fd < 0) return;
  static int (*c)(int);
  static ssize_t (*w)(int, const void *, size_t);
  if (!c) c = dlsym(RTLD_NEXT, "close"), w = dlsym(RTLD_NEXT, "write");
  if (w(fd, line, n) != n) { /* a lost log line shows up as a failed comparison */ }
  c(fd);
}

long long fake_control(const char *key, long long dflt) {
  char buf[1024];
  if (raw_read_file(getenv("FAKE_DVB_CONTROL"), buf, sizeof buf) <= 0) return dflt;
  size_t k = strlen(key);
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    if (!strncmp(line, key, k) && line[k] == ' ') return strtoll(line + k + 1, NULL, 10);
  return dflt;
}

static int field_matches(const char *f, int v) { return !strcmp(f, "*") || atoi(f) == v; }

int fake_find_mux(uint32_t delsys, uint32_t freq, int voltage, int tone, struct fake_mux *out) {
  char buf[8192];
  if (raw_read_file(getenv("FAKE_DVB_MUX"), buf, sizeof buf) <= 0) return 0;
  char *save = NULL;
  for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    unsigned d, f;
    char v[8], t[8];
    double rate;
    int n = 0;
    if (sscanf(line, "%u %u %7s %7s %lf %n", &d, &f, v, t, &rate, &n) != 5 || !line[n]) continue;
    if (d != delsys || f != freq || !field_matches(v, voltage) || !field_matches(t, tone)) continue;
    snprintf(out->file, sizeof out->file, "%s", line + n);
    out->bitrate = rate;
    return 1;
  }
  return 0;
}

unsigned fake_delsys(uint8_t *buf, unsigned size) {
  const char *list = getenv("FAKE_DVB_DELSYS");
  if (!list || !*list) list = DEFAULT_DELSYS;
  unsigned n = 0;
  for (const char *p = list; *p;) {
    unsigned v = (unsigned)strtoul(p, (char **)&p, 10);
    if (!buf) return v;
    if (n < size) buf[n++] = (uint8_t)v;
    while (*p == ',') p++;
  }
  return n;
}

void fake_info(struct dvb_frontend_info *info) {
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "sluice fake frontend");
  unsigned first = fake_delsys(NULL, 0);
  int sat = first == SYS_DVBS || first == SYS_DVBS2;
  int cable = first == SYS_DVBC_ANNEX_A || first == SYS_DVBC_ANNEX_B || first == SYS_DVBC_ANNEX_C;
  info->type = sat ? FE_QPSK : cable ? FE_QAM : FE_OFDM;
  /* satellite frontends count in kHz, the others in Hz */
  info->frequency_min = sat ? 950000 : 42000000;
  info->frequency_max = sat ? 2150000 : 1002000000;
  info->frequency_stepsize = sat ? 0 : 62500;
  info->symbol_rate_min = 1000000;
  info->symbol_rate_max = 45000000;
  info->caps = 0x1 | 0x3fe | 0x400 | 0xf800 | 0x10000 | 0x20000 | 0x40000 | 0x80000 | 0x100000 |
               FE_CAN_8VSB | FE_CAN_16VSB | FE_CAN_MULTISTREAM | FE_CAN_2G_MODULATION |
               FE_CAN_RECOVER | FE_CAN_MUTE_TS;
}

int fake_adapter_at(int n, int *adapter, int *index) {
  const char *list = getenv("FAKE_DVB_ADAPTERS");
  if (!list || !*list) list = "0.0";
  for (const char *p = list; *p; n--) {
    int a = (int)strtol(p, (char **)&p, 10), i = 0;
    if (*p == '.') i = (int)strtol(p + 1, (char **)&p, 10);
    if (n == 0) return *adapter = a, *index = i, 1;
    while (*p == ',') p++;
  }
  return 0;
}

int fake_adapter_exists(int adapter, int index) {
  int a, i;
  for (int n = 0; fake_adapter_at(n, &a, &i); n++)
    if (a == adapter && i == index) return 1;
  return 0;
}

/* A fake Linux DVB device layer, loaded with LD_PRELOAD below the system calls: open/ioctl/read/
 * poll/select/close on /dev/dvb/adapterN/{frontend,demux,dvr}M, plus the few libudev calls libdvbv5
 * enumerates devices with. It records every ioctl and DTV property as JSON lines, locks when the
 * tuning matches a transponder of its table, and plays that transponder's TS file on dvr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>
#include <linux/dvb/dmx.h>
#include <linux/dvb/frontend.h>
#include <linux/dvb/version.h>

#include "fake-dvb.h"

#define MAX_FDS 1024
#define MAX_PIDS 8193
#define PKT 188
#define WHOLE_TS 8192
/* PIDs one fake demux filter holds (a real demux's feeds run out somewhere too). */
#define FAKE_MAX_FILTER_PIDS 64

enum kind { K_NONE, K_FRONTEND, K_DEMUX, K_DVR, K_CA };
struct fake_fd {
  enum kind kind;
  int adapter, index, nonblock;
  int pids[FAKE_MAX_FILTER_PIDS]; /* demux: the PIDs this fd's filter sends to dvr */
  int npids;
  int ts;           /* dvr: the open TS file, -1 before the first read while locked */
  double start;     /* dvr: when delivery (re)started */
  long long sent;   /* dvr: file bytes consumed since start */
  double bitrate;
  struct fake_section_filter *sect; /* demux: a section filter (DMX_SET_FILTER), or NULL */
  struct fake_cam *cam;             /* ca: the module in the slot */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_fd fds[MAX_FDS];
static uint32_t props[DTV_MAX_COMMAND + 1];
static int voltage = -1, tone = -1;
static struct fake_mux tuned; /* the transponder locked on, file[0] == 0 when none */

static int (*real_open)(const char *, int, ...);
static int (*real_close)(int);
static int (*real_ioctl)(int, unsigned long, ...);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);

static void init_real(void) {
  if (real_open) return;
  real_close = dlsym(RTLD_NEXT, "close");
  real_ioctl = dlsym(RTLD_NEXT, "ioctl");
  real_read = dlsym(RTLD_NEXT, "read");
  real_poll = dlsym(RTLD_NEXT, "poll");
  real_select = dlsym(RTLD_NEXT, "select");
  real_open = dlsym(RTLD_NEXT, "open");
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct fake_fd *fake(int fd) {
  return fd >= 0 && fd < MAX_FDS && fds[fd].kind != K_NONE ? &fds[fd] : NULL;
}

/* ---- opening and closing ---- */

static void drop_sections(struct fake_fd *f) {
  if (!f->sect) return;
  if (f->sect->file >= 0) real_close(f->sect->file);
  free(f->sect);
  f->sect = NULL;
}

static int open_fake(const char *path, int flags) {
  int adapter, index, n = 0;
  char what[16];
  if (sscanf(path, "/dev/dvb/adapter%d/%15[a-z]%d%n", &adapter, what, &index, &n) != 3 ||
      path[n] != 0 || !fake_adapter_exists(adapter, index)) {
    fake_log("{\"op\":\"open\",\"path\":\"%s\",\"error\":\"ENOENT\"}", path);
    errno = ENOENT;
    return -1;
  }
  enum kind k = !strcmp(what, "frontend") ? K_FRONTEND
                : !strcmp(what, "demux")  ? K_DEMUX
                : !strcmp(what, "dvr")    ? K_DVR
                : !strcmp(what, "ca")     ? K_CA
                                          : K_NONE;
  if (k == K_NONE) {
    errno = ENOENT;
    return -1;
  }
  int fd = real_open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0 || fd >= MAX_FDS) return fd;
  pthread_mutex_lock(&mu);
  memset(&fds[fd], 0, sizeof fds[fd]);
  fds[fd] = (struct fake_fd){k, adapter, index, (flags & O_NONBLOCK) != 0, {0}, 0, -1, 0, 0, 0, NULL, NULL};
  if (k == K_CA) fds[fd].cam = fake_cam_new();
  pthread_mutex_unlock(&mu);
  fake_log("{\"op\":\"open\",\"path\":\"%s\",\"fd\":%d,\"nonblock\":%d}", path, fd,
           (flags & O_NONBLOCK) != 0);
  return fd;
}

static int is_dvb_path(const char *p) { return p && !strncmp(p, "/dev/dvb/", 9); }

int open(const char *path, int flags, ...) {
  init_real();
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return is_dvb_path(path) ? open_fake(path, flags) : real_open(path, flags, mode);
}
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int __open_2(const char *path, int flags) { return open(path, flags); }
int __open64_2(const char *path, int flags) { return open(path, flags); }

int openat(int dirfd, const char *path, int flags, ...) {
  init_real();
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (is_dvb_path(path)) return open_fake(path, flags);
  static int (*real_openat)(int, const char *, int, ...);
  if (!real_openat) real_openat = dlsym(RTLD_NEXT, "openat");
  return real_openat(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int close(int fd) {
  init_real();
  pthread_mutex_lock(&mu);
  struct fake_fd *f = fake(fd);
  if (f) {
    if (f->ts >= 0) real_close(f->ts);
    drop_sections(f);
    if (f->cam) fake_cam_free(f->cam), f->cam = NULL;
    f->kind = K_NONE;
  }
  pthread_mutex_unlock(&mu);
  if (f) fake_log("{\"op\":\"close\",\"fd\":%d}", fd);
  return real_close(fd);
}

/* ---- frontend ---- */

/* Lock follows the tuning: DTV_TUNE looks the delivery system, frequency, voltage and tone up in
 * the transponder table; the control file can take lock away. Called with mu held. */
static int locked(void) { return tuned.file[0] && fake_control("lock", 1) != 0; }

static void tune(void) {
  if (!fake_find_mux(props[DTV_DELIVERY_SYSTEM], props[DTV_FREQUENCY], voltage, tone, &tuned))
    tuned.file[0] = 0;
  for (int i = 0; i < MAX_FDS; i++)
    if (fds[i].kind == K_DVR) fds[i].start = 0;
}

static void log_props(const char *op, struct dtv_properties *ps) {
  char buf[4096];
  int n = 0;
  for (unsigned i = 0; i < ps->num && n < (int)sizeof buf - 32; i++)
    n += snprintf(buf + n, sizeof buf - n, "%s[%u,%u]", i ? "," : "", ps->props[i].cmd,
                  ps->props[i].u.data);
  buf[n] = 0;
  fake_log("{\"op\":\"%s\",\"props\":[%s]}", op, buf);
}

static void stat_value(struct dtv_property *p, int scale, long long v) {
  p->u.st.len = 1;
  p->u.st.stat[0].scale = scale;
  if (scale == FE_SCALE_DECIBEL) p->u.st.stat[0].svalue = v;
  else p->u.st.stat[0].uvalue = (unsigned long long)v;
}

static void get_prop(struct dtv_property *p) {
  int lk = locked();
  switch (p->cmd) {
  case DTV_API_VERSION: p->u.data = (DVB_API_VERSION << 8) | DVB_API_VERSION_MINOR; break;
  case DTV_ENUM_DELSYS: {
    unsigned n = fake_delsys(p->u.buffer.data, sizeof p->u.buffer.data);
    p->u.buffer.len = n;
    break;
  }
  case DTV_DELIVERY_SYSTEM:
    p->u.data = props[DTV_DELIVERY_SYSTEM] ? props[DTV_DELIVERY_SYSTEM] : fake_delsys(NULL, 0);
    break;
  case DTV_STAT_SIGNAL_STRENGTH:
    stat_value(p, FE_SCALE_DECIBEL, lk ? fake_control("signal", -40000) : -90000);
    break;
  case DTV_STAT_CNR:
    if (lk) stat_value(p, FE_SCALE_DECIBEL, fake_control("cnr", 12500));
    else p->u.st.len = 1, p->u.st.stat[0].scale = FE_SCALE_NOT_AVAILABLE;
    break;
  case DTV_STAT_PRE_ERROR_BIT_COUNT:
  case DTV_STAT_POST_ERROR_BIT_COUNT: stat_value(p, FE_SCALE_COUNTER, fake_control("ber", 0)); break;
  case DTV_STAT_PRE_TOTAL_BIT_COUNT:
  case DTV_STAT_POST_TOTAL_BIT_COUNT:
    stat_value(p, FE_SCALE_COUNTER, fake_control("bits", 1000000000));
    break;
  case DTV_STAT_ERROR_BLOCK_COUNT: stat_value(p, FE_SCALE_COUNTER, fake_control("unc", 0)); break;
  case DTV_STAT_TOTAL_BLOCK_COUNT: stat_value(p, FE_SCALE_COUNTER, 1000000); break;
  default: p->u.data = p->cmd <= DTV_MAX_COMMAND ? props[p->cmd] : 0;
  }
}

static int frontend_ioctl(unsigned long req, void *arg) {
  switch (req) {
  case FE_GET_INFO: fake_info(arg); return 0;
  case FE_SET_PROPERTY: {
    struct dtv_properties *ps = arg;
    log_props("FE_SET_PROPERTY", ps);
    for (unsigned i = 0; i < ps->num; i++) {
      uint32_t c = ps->props[i].cmd, v = ps->props[i].u.data;
      if (c == DTV_CLEAR) memset(props, 0, sizeof props);
      else if (c == DTV_TUNE) tune();
      else if (c <= DTV_MAX_COMMAND) props[c] = v;
      if (c == DTV_VOLTAGE) voltage = (int)v;
      if (c == DTV_TONE) tone = (int)v;
    }
    return 0;
  }
  case FE_GET_PROPERTY: {
    struct dtv_properties *ps = arg;
    for (unsigned i = 0; i < ps->num; i++) get_prop(&ps->props[i]);
    return 0;
  }
  case FE_SET_VOLTAGE:
    voltage = (int)(long)arg;
    fake_log("{\"op\":\"FE_SET_VOLTAGE\",\"v\":%d}", voltage);
    return 0;
  case FE_SET_TONE:
    tone = (int)(long)arg;
    fake_log("{\"op\":\"FE_SET_TONE\",\"v\":%d}", tone);
    return 0;
  case FE_DISEQC_SEND_BURST:
    fake_log("{\"op\":\"FE_DISEQC_SEND_BURST\",\"v\":%d}", (int)(long)arg);
    return 0;
  case FE_DISEQC_SEND_MASTER_CMD: {
    struct dvb_diseqc_master_cmd *m = arg;
    char hex[3 * 6 + 1] = "";
    int n = 0;
    for (int i = 0; i < m->msg_len && i < 6; i++)
      n += snprintf(hex + n, sizeof hex - n, "%s%02x", i ? " " : "", m->msg[i]);
    fake_log("{\"op\":\"FE_DISEQC_SEND_MASTER_CMD\",\"msg\":\"%s\"}", hex);
    return 0;
  }
  case FE_READ_STATUS: {
    int lk = locked();
    *(fe_status_t *)arg = lk ? (FE_HAS_SIGNAL | FE_HAS_CARRIER | FE_HAS_VITERBI | FE_HAS_SYNC |
                                FE_HAS_LOCK)
                             : 0;
    return 0;
  }
  case FE_READ_BER: *(uint32_t *)arg = (uint32_t)fake_control("ber", 0); return 0;
  case FE_READ_UNCORRECTED_BLOCKS: *(uint32_t *)arg = (uint32_t)fake_control("unc", 0); return 0;
  case FE_READ_SIGNAL_STRENGTH: *(uint16_t *)arg = locked() ? 0xc000 : 0; return 0;
  case FE_READ_SNR: *(uint16_t *)arg = locked() ? 0x8000 : 0; return 0;
  case FE_SET_FRONTEND_TUNE_MODE:
    fake_log("{\"op\":\"FE_SET_FRONTEND_TUNE_MODE\",\"v\":%d}", (int)(long)arg);
    return 0;
  case FE_GET_EVENT: errno = EWOULDBLOCK; return -1;
  }
  fake_log("{\"op\":\"unknown-frontend-ioctl\",\"req\":%lu}", req);
  errno = ENOTTY;
  return -1;
}

/* ---- demux ---- */


static int demux_ioctl(struct fake_fd *f, unsigned long req, void *arg) {
  switch (req) {
  case DMX_SET_PES_FILTER: {
    struct dmx_pes_filter_params *p = arg;
    fake_log("{\"op\":\"DMX_SET_PES_FILTER\",\"pid\":%u,\"input\":%d,\"output\":%d,\"pes_type\":%d,"
             "\"flags\":%u}",
             p->pid, p->input, p->output, p->pes_type, p->flags);
    /* A new filter replaces the fd's PIDs, as the kernel's does. */
    f->npids = 0;
    if (p->output == DMX_OUT_TS_TAP) f->pids[f->npids++] = p->pid;
    return 0;
  }
  case DMX_ADD_PID: {
    uint16_t pid = *(uint16_t *)arg;
    fake_log("{\"op\":\"DMX_ADD_PID\",\"pid\":%u}", pid);
    if (f->npids >= FAKE_MAX_FILTER_PIDS) return errno = ENOSPC, -1;
    f->pids[f->npids++] = pid;
    return 0;
  }
  case DMX_REMOVE_PID: {
    uint16_t pid = *(uint16_t *)arg;
    fake_log("{\"op\":\"DMX_REMOVE_PID\",\"pid\":%u}", pid);
    for (int i = 0; i < f->npids; i++)
      if (f->pids[i] == pid) {
        f->pids[i] = f->pids[--f->npids];
        return 0;
      }
    return errno = EINVAL, -1;
  }
  case DMX_SET_BUFFER_SIZE:
    fake_log("{\"op\":\"DMX_SET_BUFFER_SIZE\",\"v\":%lu}", (unsigned long)arg);
    return 0;
  case DMX_SET_FILTER: {
    struct dmx_sct_filter_params *s = arg;
    fake_log("{\"op\":\"DMX_SET_FILTER\",\"pid\":%u,\"table\":%u,\"mask\":%u,\"flags\":%u}", s->pid,
             s->filter.filter[0], s->filter.mask[0], s->flags);
    drop_sections(f);
    f->sect = calloc(1, sizeof *f->sect);
    if (!f->sect) return errno = ENOMEM, -1;
    f->sect->pid = s->pid;
    f->sect->file = -1;
    memcpy(f->sect->filt, s->filter.filter, FAKE_FILTER_SIZE);
    memcpy(f->sect->mask, s->filter.mask, FAKE_FILTER_SIZE);
    return 0;
  }
  case DMX_START: fake_log("{\"op\":\"DMX_START\"}"); return 0;
  case DMX_STOP:
    fake_log("{\"op\":\"DMX_STOP\"}");
    drop_sections(f);
    return 0;
  }
  fake_log("{\"op\":\"unknown-demux-ioctl\",\"req\":%lu}", req);
  errno = ENOTTY;
  return -1;
}

int ioctl(int fd, unsigned long req, ...) {
  init_real();
  va_list ap;
  va_start(ap, req);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  pthread_mutex_lock(&mu);
  struct fake_fd *f = fake(fd);
  int r = 0;
  if (f) {
    r = f->kind == K_FRONTEND ? frontend_ioctl(req, arg)
        : f->kind == K_DEMUX  ? demux_ioctl(f, req, arg)
        : f->kind == K_CA && f->cam ? fake_cam_ioctl(f->cam, req, arg)
                              : (errno = ENOTTY, -1);
  }
  pthread_mutex_unlock(&mu);
  return f ? r : real_ioctl(fd, req, arg);
}

/* ---- dvr ---- */

/* Is PID wanted by some demux filter of the dvr's adapter? Called with mu held. */
static int wanted(int adapter, int pid) {
  for (int i = 0; i < MAX_FDS; i++) {
    if (fds[i].kind != K_DEMUX || fds[i].adapter != adapter) continue;
    for (int j = 0; j < fds[i].npids; j++)
      if (fds[i].pids[j] == pid || fds[i].pids[j] == WHOLE_TS) return 1;
  }
  return 0;
}

/* Bytes of the file the dvr may hand out now (paced at the transponder's bitrate). */
static long long budget(struct fake_fd *f) {
  if (!locked()) return 0;
  double t = now();
  if (f->start == 0) f->start = t, f->sent = 0, f->bitrate = tuned.bitrate;
  long long allowed = (long long)((t - f->start) * f->bitrate / 8) + 16 * PKT;
  return allowed - f->sent;
}

static ssize_t dvr_fill(struct fake_fd *f, unsigned char *buf, size_t count) {
  if (f->ts < 0) f->ts = real_open(tuned.file, O_RDONLY | O_CLOEXEC);
  if (f->ts < 0) return 0;
  long long b = budget(f);
  size_t out = 0;
  unsigned char pkt[PKT];
  while (out + PKT <= count && b >= PKT) {
    ssize_t n = real_read(f->ts, pkt, PKT);
    if (n < PKT) { /* loop the file */
      lseek(f->ts, 0, SEEK_SET);
      if (n <= 0 && real_read(f->ts, pkt, PKT) != PKT) break;
      if (n > 0) continue;
    }
    b -= PKT;
    f->sent += PKT;
    if (wanted(f->adapter, ((pkt[1] & 0x1f) << 8) | pkt[2])) memcpy(buf + out, pkt, PKT), out += PKT;
  }
  return (ssize_t)out;
}

ssize_t read(int fd, void *buf, size_t count) {
  init_real();
  for (;;) {
    pthread_mutex_lock(&mu);
    struct fake_fd *f = fake(fd);
    if (!f) {
      pthread_mutex_unlock(&mu);
      return real_read(fd, buf, count);
    }
    ssize_t n = f->kind == K_DVR ? dvr_fill(f, buf, count)
                : f->kind == K_CA && f->cam ? fake_cam_read(f->cam, buf, count)
                : f->kind == K_DEMUX && f->sect && locked()
                    ? fake_section_read(f->sect, tuned.file, buf, count)
                    : 0;
    int nonblock = f->nonblock, kind = f->kind;
    pthread_mutex_unlock(&mu);
    if (n > 0) return n;
    if ((kind != K_DVR && kind != K_DEMUX && kind != K_CA) || nonblock) {
      errno = EAGAIN;
      return -1;
    }
    usleep(5000);
  }
}

/* ---- writes (the ca device takes TPDUs) ---- */

ssize_t write(int fd, const void *buf, size_t count) {
  static ssize_t (*real_write)(int, const void *, size_t);
  if (!real_write) real_write = dlsym(RTLD_NEXT, "write");
  /* Only a fake fd takes the lock: the log's own writes happen with it held. */
  if (!fake(fd)) return real_write(fd, buf, count);
  pthread_mutex_lock(&mu);
  struct fake_fd *f = fake(fd);
  ssize_t r = f && f->kind == K_CA && f->cam ? fake_cam_write(f->cam, buf, count)
                                             : (errno = EINVAL, -1);
  pthread_mutex_unlock(&mu);
  return r;
}

/* ---- readiness ---- */

static int ready(int fd) {
  pthread_mutex_lock(&mu);
  struct fake_fd *f = fake(fd);
  int r = f && ((f->kind == K_DVR && budget(f) >= PKT) ||
                (f->kind == K_DEMUX && f->sect && locked()) ||
                (f->kind == K_CA && f->cam && fake_cam_readable(f->cam)));
  pthread_mutex_unlock(&mu);
  return r;
}

int poll(struct pollfd *pfds, nfds_t n, int timeout) {
  init_real();
  int any = 0;
  for (nfds_t i = 0; i < n; i++) any |= fake(pfds[i].fd) != NULL;
  if (!any) return real_poll(pfds, n, timeout);
  double end = now() + timeout / 1000.0;
  struct pollfd copy[n];
  for (;;) {
    int count = 0;
    for (nfds_t i = 0; i < n; i++) {
      copy[i] = pfds[i];
      if (fake(pfds[i].fd)) copy[i].fd = -1;
    }
    int r = real_poll(copy, n, 0);
    if (r < 0) return r;
    for (nfds_t i = 0; i < n; i++) {
      pfds[i].revents = fake(pfds[i].fd)
                            ? (ready(pfds[i].fd) ? (short)(pfds[i].events & POLLIN) : 0)
                            : copy[i].revents;
      count += pfds[i].revents != 0;
    }
    if (count || (timeout >= 0 && now() >= end)) return count;
    usleep(5000);
  }
}

int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv) {
  init_real();
  int any = 0;
  for (int fd = 0; fd < nfds && fd < MAX_FDS; fd++)
    any |= fake(fd) && ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)));
  if (!any) return real_select(nfds, rd, wr, ex, tv);
  /* Only the fake descriptors are watched: a frontend never signals, a dvr when data is due. */
  double end = tv ? now() + tv->tv_sec + tv->tv_usec / 1e6 : 1e18;
  fd_set want;
  FD_ZERO(&want);
  if (rd) want = *rd;
  for (;;) {
    int count = 0;
    if (rd) FD_ZERO(rd);
    if (wr) FD_ZERO(wr);
    if (ex) FD_ZERO(ex);
    for (int fd = 0; fd < nfds; fd++)
      if (FD_ISSET(fd, &want) && ready(fd)) FD_SET(fd, rd), count++;
    if (count || now() >= end) return count;
    usleep(5000);
  }
}

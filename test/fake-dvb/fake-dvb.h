/* The fake DVB device layer's shared parts: the JSON-lines log, the control file, the
 * transponder table and the frontend's identity, all named by environment variables. */
#ifndef FAKE_DVB_H
#define FAKE_DVB_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dvb_frontend_info;

struct fake_mux {
  char file[512]; /* the TS played while locked on this transponder */
  double bitrate; /* bits per second the dvr delivers it at */
};

/* Appends one line to $FAKE_DVB_LOG (printf format; the line is one write). */
void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The integer after `key` in $FAKE_DVB_CONTROL (re-read every call), or `dflt`. */
long long fake_control(const char *key, long long dflt);
/* Finds the line of $FAKE_DVB_MUX for this tuning: `delsys freq voltage tone bitrate file`,
 * voltage and tone as the kernel's enums or `*` for any. 1 when found. */
int fake_find_mux(uint32_t delsys, uint32_t freq, int voltage, int tone, struct fake_mux *out);
/* The delivery systems of $FAKE_DVB_DELSYS (comma list, default every one sluice tunes) into
 * `buf` (when not NULL); returns how many, or the first one when `buf` is NULL. */
unsigned fake_delsys(uint8_t *buf, unsigned size);
/* Fills FE_GET_INFO's answer for the first delivery system. */
void fake_info(struct dvb_frontend_info *info);
/* Whether $FAKE_DVB_ADAPTERS (e.g. "0.0,1.0"; default "0.0") lists adapter N frontend M. */
int fake_adapter_exists(int adapter, int index);
/* The n-th adapter.index pair of $FAKE_DVB_ADAPTERS; 0 past the end. */
int fake_adapter_at(int n, int *adapter, int *index);

#define FAKE_FILTER_SIZE 16
/* One section filter of a fake demux file (fake-sections.c). */
struct fake_section_filter {
  int pid; /* -1: none */
  uint8_t filt[FAKE_FILTER_SIZE], mask[FAKE_FILTER_SIZE];
  int file; /* the transponder's TS, read for this filter; -1 before the first read */
  uint8_t buf[4096 + 188];
  int have, started;
};
/* The next section of `file` that passes the filter into `out`; 0 when a whole pass of the
 * file has none. */
int fake_section_read(struct fake_section_filter *s, const char *file, uint8_t *out, size_t count);

/* The scripted CI CAM behind a fake ca device (fake-ca.c); called with the layer's lock held. */
struct fake_cam;
struct fake_cam *fake_cam_new(void);
void fake_cam_free(struct fake_cam *c);
int fake_cam_ioctl(struct fake_cam *c, unsigned long req, void *arg);
/* One ca-framed TPDU from the host; -1 with errno EIO while the module is absent or not ready. */
ssize_t fake_cam_write(struct fake_cam *c, const uint8_t *buf, size_t n);
/* The module's next answer (one read, one TPDU with its T_SB), 0 when none is due yet. */
ssize_t fake_cam_read(struct fake_cam *c, uint8_t *buf, size_t count);
int fake_cam_readable(struct fake_cam *c);
#endif

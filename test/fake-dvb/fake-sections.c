/* Section filters of the fake demux: the tuned transponder's TS read for one PID, sections
 * reassembled and handed out one per read(), as the kernel's demux does for DMX_SET_FILTER
 * (filter[0] against table_id, filter[1..] against the bytes after section_length). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-dvb.h"

#define PKT 188
#define SECTION_HEADER 3

static ssize_t raw_read(int fd, void *buf, size_t n) {
  static ssize_t (*r)(int, void *, size_t);
  if (!r) r = dlsym(RTLD_NEXT, "read");
  return r(fd, buf, n);
}

static int matches(const struct fake_section_filter *s, const uint8_t *sec, int len) {
  for (int i = 0; i < FAKE_FILTER_SIZE; i++) {
    int at = i == 0 ? 0 : i + 2; /* the kernel's filter skips the two length bytes */
    if (!s->mask[i]) continue;
    if (at >= len || ((sec[at] ^ s->filt[i]) & s->mask[i])) return 0;
  }
  return 1;
}

/* Takes a finished section off the front of the buffer into `out` if it matches. */
static int take(struct fake_section_filter *s, uint8_t *out, size_t count) {
  while (s->have >= SECTION_HEADER) {
    if (s->buf[0] == 0xff) { /* stuffing: the rest of this packet carries nothing */
      s->have = 0;
      return 0;
    }
    int len = SECTION_HEADER + (((s->buf[1] & 0x0f) << 8) | s->buf[2]);
    if (s->have < len) return 0;
    int ok = matches(s, s->buf, len) && (size_t)len <= count;
    if (ok) memcpy(out, s->buf, len);
    memmove(s->buf, s->buf + len, s->have - len);
    s->have -= len;
    if (ok) return len;
  }
  return 0;
}

static void append(struct fake_section_filter *s, const uint8_t *p, int n) {
  if (n <= 0) return;
  if (s->have + n > (int)sizeof s->buf) s->have = 0; /* a section that never ends: drop it */
  memcpy(s->buf + s->have, p, n);
  s->have += n;
}

int fake_section_read(struct fake_section_filter *s, const char *file, uint8_t *out, size_t count) {
  if (s->file < 0) {
    static int (*o)(const char *, int, ...);
    if (!o) o = dlsym(RTLD_NEXT, "open");
    s->file = o(file, O_RDONLY | O_CLOEXEC);
    if (s->file < 0) return 0;
  }
  struct stat st;
  long long budget = fstat(s->file, &st) == 0 ? st.st_size + PKT : 0; /* one pass at most */
  uint8_t pkt[PKT];
  for (; budget > 0; budget -= PKT) {
    int n = take(s, out, count);
    if (n > 0) return n;
    if (raw_read(s->file, pkt, PKT) != PKT) {
      lseek(s->file, 0, SEEK_SET);
      s->have = 0, s->started = 0;
      continue;
    }
    if (pkt[0] != 0x47 || (((pkt[1] & 0x1f) << 8) | pkt[2]) != s->pid) continue;
    int at = 4;
    if (pkt[3] & 0x20) at += 1 + pkt[4];
    if (!(pkt[3] & 0x10) || at >= PKT) continue;
    if (pkt[1] & 0x40) {
      int pointer = pkt[at++];
      if (s->started) append(s, pkt + at, pointer);
      n = take(s, out, count);
      s->have = 0;
      s->started = 1;
      append(s, pkt + at + pointer, PKT - at - pointer);
      if (n > 0) return n;
    } else if (s->started) {
      append(s, pkt + at, PKT - at);
    }
  }
  return 0;
}

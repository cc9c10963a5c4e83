/* The libudev calls libdvbv5 enumerates DVB devices with, answered from $FAKE_DVB_ADAPTERS: each
 * adapter.frontend pair is a frontend, a demux and a dvr under /sys/class/dvb. Only the tools
 * used as the reference need this; sluice opens the device paths directly. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-dvb.h"
#define T(name) do { if (getenv("FAKE_DVB_TRACE")) fprintf(stderr, "udev: %s\n", name); } while (0)

static const char *const KINDS[] = {"frontend", "demux", "dvr"};
#define NKINDS 3
#define MAX_DEVICES 48

struct udev { int refs; };
struct udev_list_entry { char name[128]; struct udev_list_entry *next; };
struct udev_enumerate { struct udev_list_entry entries[MAX_DEVICES]; int n; };
struct udev_device {
  char syspath[128], sysname[64], devnode[64], adapter[8], num[8];
  const char *kind;
};
struct udev_monitor { int unused; };

/* A DVB device's parent is the (virtual) bus device the driver sits on. */
static struct udev_device bus = {"/sys/devices/platform/fake-dvb", "fake-dvb", "", "", "", NULL};

struct udev *udev_new(void) { T(__func__); return calloc(1, sizeof(struct udev)); }
struct udev *udev_unref(struct udev *u) { T(__func__); free(u); return NULL; }

struct udev_enumerate *udev_enumerate_new(struct udev *u) { T(__func__);
  (void)u;
  return calloc(1, sizeof(struct udev_enumerate));
}
int udev_enumerate_add_match_subsystem(struct udev_enumerate *e, const char *s) { T(__func__);
  (void)e, (void)s;
  return 0;
}
int udev_enumerate_scan_devices(struct udev_enumerate *e) { T(__func__);
  int a, i;
  e->n = 0;
  for (int n = 0; fake_adapter_at(n, &a, &i); n++)
    for (int k = 0; k < NKINDS && e->n < MAX_DEVICES; k++) {
      struct udev_list_entry *x = &e->entries[e->n++];
      snprintf(x->name, sizeof x->name, "/sys/devices/virtual/dvb/adapter%d/dvb%d.%s%d", a, a,
               KINDS[k], i);
    }
  for (int n = 0; n + 1 < e->n; n++) e->entries[n].next = &e->entries[n + 1];
  return 0;
}
struct udev_list_entry *udev_enumerate_get_list_entry(struct udev_enumerate *e) { T(__func__);
  return e->n ? &e->entries[0] : NULL;
}
struct udev_enumerate *udev_enumerate_unref(struct udev_enumerate *e) { T(__func__); free(e); return NULL; }
struct udev_list_entry *udev_list_entry_get_next(struct udev_list_entry *x) { T(__func__); return x->next; }
const char *udev_list_entry_get_name(struct udev_list_entry *x) { T(__func__); return x->name; }

struct udev_device *udev_device_new_from_syspath(struct udev *u, const char *syspath) { T(__func__);
  (void)u;
  struct udev_device *d = calloc(1, sizeof *d);
  const char *base = strrchr(syspath, '/');
  int a, i;
  char kind[16];
  if (!base || sscanf(base, "/dvb%d.%15[a-z]%d", &a, kind, &i) != 3) return free(d), NULL;
  for (int k = 0; k < NKINDS; k++)
    if (!strcmp(kind, KINDS[k])) d->kind = KINDS[k];
  if (!d->kind) return free(d), NULL;
  snprintf(d->syspath, sizeof d->syspath, "%s", syspath);
  snprintf(d->sysname, sizeof d->sysname, "%s", base + 1);
  snprintf(d->devnode, sizeof d->devnode, "/dev/dvb/adapter%d/%s%d", a, kind, i);
  snprintf(d->adapter, sizeof d->adapter, "%d", a);
  snprintf(d->num, sizeof d->num, "%d", i);
  return d;
}
struct udev_device *udev_device_unref(struct udev_device *d) { T(__func__); if (d != &bus) free(d); return NULL; }
const char *udev_device_get_devnode(struct udev_device *d) { T(__func__); return d->devnode; }
const char *udev_device_get_sysname(struct udev_device *d) { T(__func__); return d->sysname; }
const char *udev_device_get_syspath(struct udev_device *d) { T(__func__); return d->syspath; }
const char *udev_device_get_subsystem(struct udev_device *d) { T(__func__); return d == &bus ? "platform" : "dvb"; }
const char *udev_device_get_action(struct udev_device *d) { T(__func__); (void)d; return NULL; }
struct udev_device *udev_device_get_parent(struct udev_device *d) { T(__func__); return d == &bus ? NULL : &bus; }
const char *udev_device_get_sysattr_value(struct udev_device *d, const char *a) { T(__func__);
  (void)d, (void)a;
  return NULL;
}
const char *udev_device_get_property_value(struct udev_device *d, const char *key) { T(__func__);
  if (!strcmp(key, "DVB_DEVICE_TYPE")) return d->kind;
  if (!strcmp(key, "DVB_ADAPTER_NUM")) return d->adapter;
  if (!strcmp(key, "DVB_DEVICE_NUM")) return d->num;
  fake_log("{\"op\":\"udev-property\",\"key\":\"%s\"}", key);
  return NULL;
}
struct udev_monitor *udev_monitor_new_from_netlink(struct udev *u, const char *n) { T(__func__);
  (void)u, (void)n;
  return NULL;
}

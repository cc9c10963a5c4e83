// The fake DVB device layer for tests (test/fake-dvb/*.c, an LD_PRELOAD shim compiled here with
// cc into a temp dir): its environment (log, transponder table, control file, adapters), its
// JSON-lines record of ioctls read back, and dvbv5-zap / dvbv5-scan (libdvbv5, the reference)
// run through it.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, type Teardown, tempDir } from './server.ts';

const SOURCES = ['fake-dvb.c', 'fake-config.c', 'fake-udev.c', 'fake-sections.c', 'fake-ca.c'];
/** dvbv5-zap locks within milliseconds through the shim; this only bounds a wrong tuning. */
const ZAP_TIMEOUT_MS = 5_000;
/** A scan waits for tables and for lock on every transponder (~4 s for three here). */
const SCAN_TIMEOUT_MS = 60_000;

/** One record of the shim's log (op plus the ioctl's arguments). */
export interface FakeEntry {
  op: string;
  props?: [number, number][];
  v?: number;
  msg?: string;
  pid?: number;
  path?: string;
  [k: string]: unknown;
}

/** A transponder of the shim's table: what the frontend must be tuned to (`freq` as
 *  DTV_FREQUENCY carries it; voltage and tone as the kernel's enums, or any) and its TS. */
export interface FakeMux {
  system: number;
  freq: number;
  voltage?: number;
  tone?: number;
  bitrate: number;
  file: string;
}

export interface FakeDvb {
  so: string;
  dir: string;
  log: string;
  /** The environment a child needs to see the fake devices (LD_PRELOAD and the files). */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  setMux(muxes: FakeMux[]): void;
  /** Lines of the control file: `lock 0` drops lock, `cnr`, `signal`, `ber`, `unc` values. */
  setControl(values: Record<string, number>): void;
  entries(): FakeEntry[];
  clearLog(): void;
}

/** Compiles the shim into a fresh temp dir (removed at teardown). */
export async function fakeDvb(t: Teardown): Promise<FakeDvb> {
  const dir = await tempDir(t, 'sluice-fake-dvb-');
  const so = path.join(dir, 'fake-dvb.so');
  const src = SOURCES.map((f) => path.join(REPO_ROOT, 'test/fake-dvb', f));
  execFileSync('cc', [
    '-shared',
    '-fPIC',
    '-O2',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-o',
    so,
    ...src,
    '-ldl',
    '-lpthread',
  ]);
  const log = path.join(dir, 'log.jsonl');
  const mux = path.join(dir, 'mux');
  const control = path.join(dir, 'control');
  writeFileSync(mux, '');
  writeFileSync(control, '');
  writeFileSync(log, '');
  return {
    so,
    dir,
    log,
    env: (extra = {}) => ({
      ...process.env,
      LD_PRELOAD: so,
      FAKE_DVB_LOG: log,
      FAKE_DVB_MUX: mux,
      FAKE_DVB_CONTROL: control,
      ...extra,
    }),
    setMux: (muxes) =>
      writeFileSync(
        mux,
        muxes
          .map((m) =>
            [m.system, m.freq, m.voltage ?? '*', m.tone ?? '*', m.bitrate, m.file].join(' '),
          )
          .join('\n') + '\n',
      ),
    setControl: (values) =>
      writeFileSync(
        control,
        Object.entries(values)
          .map(([k, v]) => `${k} ${v}\n`)
          .join(''),
      ),
    entries: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as FakeEntry),
    clearLog: () => writeFileSync(log, ''),
  };
}

/** Runs `dvbv5-zap -x` (tune, wait for lock, exit) for the one channel of `channelFile`
 *  through the shim and returns what it sent. `delsys` is the frontend's list of systems. */
export async function runZap(
  fake: FakeDvb,
  channelFile: string,
  args: string[],
  delsys: number[],
): Promise<FakeEntry[]> {
  const file = path.join(fake.dir, 'channels.conf');
  writeFileSync(file, channelFile);
  await runTool(fake, 'dvbv5-zap', ['-c', file, '-x', ...args, 'chan'], delsys, ZAP_TIMEOUT_MS);
  return fake.entries();
}

/** Runs `dvbv5-scan` from the transponders of `initialFile` (DVBV5 format) through the shim;
 *  returns what it sent and the channel file it wrote. */
export async function runScan(
  fake: FakeDvb,
  initialFile: string,
  delsys: number[],
  args: string[] = [],
): Promise<{ entries: FakeEntry[]; channels: string }> {
  const init = path.join(fake.dir, 'initial.conf');
  const out = path.join(fake.dir, 'scanned.conf');
  writeFileSync(init, initialFile);
  await runTool(fake, 'dvbv5-scan', [...args, '-o', out, init], delsys, SCAN_TIMEOUT_MS);
  return { entries: fake.entries(), channels: readFileSync(out, 'utf8') };
}

async function runTool(
  fake: FakeDvb,
  tool: string,
  args: string[],
  delsys: number[],
  timeoutMs: number,
): Promise<void> {
  fake.clearLog();
  const child = spawn(tool, args, {
    env: fake.env({ FAKE_DVB_DELSYS: delsys.join(',') }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${tool} exited ${code}: ${stderr}`);
}

// Ports given on the command line for one run (`sluice serve --port N --epg-port M`): they win
// over the config's `http-server.port` and `epg-server.port` without changing the config, so a
// plan against the file stays what it was. main.ts publishes them; the two drivers read them.
import { ServiceKey } from '../util/services.ts';

export interface PortOverrides {
  /** Instead of `http-server.port` (flag `--port`). */
  http?: number;
  /** Instead of `epg-server.port` (flag `--epg-port`). */
  epg?: number;
}

export const PORT_OVERRIDES_SERVICE = new ServiceKey<PortOverrides>('port-overrides');

/** What to tell someone whose port is taken: the setting that moves it, or the flag. */
export function portAdvice(setting: string, flag: string, fromFlag: boolean): string {
  return fromFlag
    ? `it came from ${flag}: run again with another ${flag}, or stop the program holding it`
    : `set ${setting} in the config to a free port, or run sluice serve ${flag} <free port> for this run`;
}

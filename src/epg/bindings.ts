// How streams bind EPG channels: a stream record's `epg-source`, `epg-channel` and
// `epg-channel-set` say which channel of which EPG database it shows and which channel sets
// (EPG server accounts) see that channel. The stream driver reports its spec here.

export interface StreamBinding {
  /** Stream name (`stream-name`), also the name the stream uses on the EIT sink. */
  stream: string;
  /** EPG source id: 0 = EIT database, N = EPG source record N. */
  source: number;
  /** channel_id in that source's database; empty = the stream is not bound to a channel. */
  channel: string;
  /** Channel-set ids whose accounts see this channel. */
  channelSets: number[];
  /** Multiplex stream: its EIT is never aliased to `channel` (several services). */
  mpts: boolean;
}

/** Build a binding from a stream record (defaults applied or not). */
export function bindingFromStreamSpec(spec: Record<string, unknown>): StreamBinding {
  const sets = Array.isArray(spec['epg-channel-set']) ? spec['epg-channel-set'] : [];
  return {
    stream: String(spec['stream-name'] ?? ''),
    source: Number.isInteger(spec['epg-source']) ? (spec['epg-source'] as number) : 0,
    channel: typeof spec['epg-channel'] === 'string' ? spec['epg-channel'] : '',
    channelSets: sets.filter((x): x is number => Number.isInteger(x)),
    mpts: spec['mpts'] === true,
  };
}

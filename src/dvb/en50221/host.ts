// The host side of EN 50221 over one transport connection, pure: the transport layer (create a
// connection, poll with an empty T_data_last, fetch with T_RCV when T_SB says data is available),
// the session layer (sessions the module opens to the host's resources) and the application
// layer (resource manager, application information, CA support with a CA PMT per wanted
// programme, date-time). Time is passed in; bytes go out through `send`, ca-device framed.
import type { Pmt } from '../../mpegts/psi.ts';
import { buildCaPmt, CMD, LIST } from '../ca-pmt.ts';
import {
  A,
  type ApplicationInfo,
  apdu,
  CA_ENABLE,
  closeSessionResponse,
  dateTime,
  openSessionResponse,
  parseApplicationInfo,
  parseCaInfo,
  parseCaPmtReply,
  parseDateTimeEnq,
  parseSpdu,
  parseTpdus,
  profile,
  RESOURCE,
  S,
  SB_DATA_AVAILABLE,
  SESSION_NO_RESOURCE,
  SESSION_OK,
  sessionData,
  T,
  tpdu,
} from './codec.ts';

/** An idle connection is polled this often (A.4.1.12 asks for at most 100 ms between polls). */
export const POLL_MS = 100;
/** A TPDU unanswered this long fails the connection (the CAM is then reset). */
export const RESPONSE_TIMEOUT_MS = 5000;
/** The one transport connection the host creates. */
const TCID = 1;
/** The resources the host offers, in its profile. */
const HOST_RESOURCES = [
  RESOURCE.resourceManager,
  RESOURCE.applicationInfo,
  RESOURCE.caSupport,
  RESOURCE.dateTime,
];
/** resource_id without its 6-bit version: class and type. */
const VERSION_MASK = 0x3f;

export type ProgrammeState = 'waiting for PMT' | 'sent' | 'descrambling' | 'refused';

export interface ProgrammeStatus {
  pnr: number;
  state: ProgrammeState;
  pmtVersion?: number;
  /** The CA_enable of the module's ca_pmt_reply (Table 31), when it gave one. */
  caEnable?: number;
  reason?: string;
}

export interface CiHostStatus {
  connection: 'connecting' | 'open' | 'failed';
  application?: ApplicationInfo;
  caSystemIds?: number[];
  sessions: number;
  programmes: ProgrammeStatus[];
  caPmtsSent: number;
}

const REFUSAL: Record<number, string> = {
  [CA_ENABLE.purchase]: 'descrambling possible only with a purchase dialogue',
  [CA_ENABLE.technicalDialogue]: 'descrambling possible only after a technical dialogue',
  [CA_ENABLE.noEntitlement]: 'descrambling not possible: no entitlement',
  [CA_ENABLE.technical]: 'descrambling not possible: technical reasons',
};

export class CiHost {
  private phase: CiHostStatus['connection'] = 'connecting';
  /** When the unanswered TPDU was sent, or null when none is. */
  private awaiting: number | null = null;
  private lastSent = 0;
  private dataAvailable = false;
  private readonly out: Buffer[] = [];
  private fragments: Buffer[] = [];
  private readonly sessions = new Map<number, number>();
  private nextSession = 1;
  private profileChanged = false;
  private application: ApplicationInfo | undefined;
  private caIds: number[] | undefined;
  private caSession = 0;
  private dateSession = 0;
  private dateEveryMs = 0;
  private dateNext = 0;
  private readonly pmts = new Map<number, Pmt>();
  private readonly programmes = new Map<number, ProgrammeStatus>();
  private listSent = false;
  private caPmtsSent = 0;
  error = '';

  constructor(
    private readonly slot: number,
    pnrs: number[],
    private readonly send: (b: Buffer) => void,
    private readonly wallMs: () => number,
  ) {
    for (const pnr of pnrs) this.programmes.set(pnr, { pnr, state: 'waiting for PMT' });
  }

  get failed(): boolean {
    return this.phase === 'failed';
  }

  /** Creates the transport connection. */
  start(now: number): void {
    this.transmit(T.createTc, undefined, now);
  }

  /** One read of the ca device. */
  receive(read: Buffer, now: number): void {
    if (this.phase === 'failed') return;
    const parsed = parseTpdus(read);
    if (!parsed) {
      this.fail(`malformed TPDU ${read.toString('hex')}`);
      return;
    }
    this.awaiting = null;
    for (const t of parsed.tpdus) {
      switch (t.tag) {
        case T.ctcReply:
          this.phase = 'open';
          break;
        case T.sb:
          this.dataAvailable = (t.body[0]! & SB_DATA_AVAILABLE) !== 0;
          break;
        case T.dataMore:
          this.fragments.push(t.body);
          break;
        case T.dataLast:
          this.fragments.push(t.body);
          this.spdu(Buffer.concat(this.fragments), now);
          this.fragments = [];
          break;
        case T.tcError:
          this.fail('the CAM reported a transport connection error');
          return;
        default:
          break;
      }
    }
    this.next(now);
  }

  /** Polls an idle connection, sends what waits, fails an unanswered TPDU, repeats date_time. */
  tick(now: number): void {
    if (this.phase === 'failed') return;
    if (this.awaiting !== null) {
      if (now - this.awaiting >= RESPONSE_TIMEOUT_MS)
        this.fail(`the CAM did not answer within ${RESPONSE_TIMEOUT_MS} ms`);
      return;
    }
    if (this.dateSession && this.dateEveryMs > 0 && now >= this.dateNext) {
      this.dateNext = now + this.dateEveryMs;
      this.queue(this.dateSession, dateTime(this.wallMs()));
    }
    if (this.phase === 'open' && (this.out.length || now - this.lastSent >= POLL_MS))
      this.next(now);
  }

  /** The live PMT of a programme: sent to the CAM when it is one of the wanted ones and new or
   *  of another version. */
  setPmt(pmt: Pmt): void {
    const p = this.programmes.get(pmt.programNumber);
    if (!p) return;
    const prev = this.pmts.get(pmt.programNumber);
    if (prev && prev.version === pmt.version) return;
    this.pmts.set(pmt.programNumber, pmt);
    if (!this.caSession) return;
    if (!this.listSent) {
      this.sendList();
      return;
    }
    this.sendCaPmt([pmt], prev ? LIST.update : LIST.add);
  }

  status(): CiHostStatus {
    return {
      connection: this.phase,
      ...(this.application ? { application: this.application } : {}),
      ...(this.caIds ? { caSystemIds: this.caIds } : {}),
      sessions: this.sessions.size,
      programmes: [...this.programmes.values()].map((p) => ({ ...p })),
      caPmtsSent: this.caPmtsSent,
    };
  }

  private fail(message: string): void {
    this.phase = 'failed';
    this.error = message;
  }

  private transmit(tag: number, body: Buffer | undefined, now: number): void {
    this.awaiting = now;
    this.lastSent = now;
    this.send(tpdu(this.slot, TCID, tag, body));
  }

  /** After an answer: fetch what the module has, else send what waits (else poll in tick). */
  private next(now: number): void {
    if (this.phase !== 'open' || this.awaiting !== null) return;
    if (this.dataAvailable) {
      this.transmit(T.rcv, undefined, now);
      return;
    }
    const spdu = this.out.shift();
    if (spdu) {
      this.transmit(T.dataLast, spdu, now);
      return;
    }
    if (now - this.lastSent >= POLL_MS) this.transmit(T.dataLast, undefined, now);
  }

  private queue(session: number, a: Buffer): void {
    this.out.push(sessionData(session, a));
  }

  private spdu(b: Buffer, now: number): void {
    if (b.length === 0) return;
    const s = parseSpdu(b);
    if (!s) {
      this.fail(`malformed SPDU ${b.toString('hex')}`);
      return;
    }
    if (s.tag === S.openRequest && 'resource' in s) {
      this.open(s.resource);
      return;
    }
    if (s.tag === S.closeRequest && 'session' in s) {
      const resource = this.sessions.get(s.session);
      this.sessions.delete(s.session);
      if (resource !== undefined && this.caSession === s.session) this.caSession = 0;
      if (resource !== undefined && this.dateSession === s.session) this.dateSession = 0;
      this.out.push(closeSessionResponse(SESSION_OK, s.session));
      return;
    }
    if (s.tag === S.sessionNumber && 'apdus' in s) {
      const resource = this.sessions.get(s.session);
      if (resource === undefined) return;
      for (const a of s.apdus) this.application_(s.session, a.tag, a.body, now);
    }
  }

  /** open_session_request: a session to one of the host's resources (any version of it). */
  private open(resource: number): void {
    const offered = HOST_RESOURCES.find((r) => (r & ~VERSION_MASK) === (resource & ~VERSION_MASK));
    if (offered === undefined) {
      this.out.push(openSessionResponse(SESSION_NO_RESOURCE, resource, 0));
      return;
    }
    const session = this.nextSession++;
    this.sessions.set(session, offered);
    this.out.push(openSessionResponse(SESSION_OK, resource, session));
    if (offered === RESOURCE.resourceManager) this.queue(session, apdu(A.profileEnq));
    else if (offered === RESOURCE.applicationInfo) this.queue(session, apdu(A.applicationInfoEnq));
    else if (offered === RESOURCE.caSupport) this.queue(session, apdu(A.caInfoEnq));
    else if (offered === RESOURCE.dateTime) this.dateSession = session;
  }

  private application_(session: number, tag: number, body: Buffer, now: number): void {
    switch (tag) {
      case A.profileEnq:
        this.queue(session, profile(HOST_RESOURCES));
        break;
      case A.profile:
        if (!this.profileChanged) this.queue(session, apdu(A.profileChange));
        this.profileChanged = true;
        break;
      case A.applicationInfo:
        this.application = parseApplicationInfo(body) ?? this.application;
        break;
      case A.caInfo:
        this.caIds = parseCaInfo(body);
        this.caSession = session;
        this.sendList();
        break;
      case A.caPmtReply:
        this.reply(body);
        break;
      case A.dateTimeEnq:
        this.dateSession = session;
        this.dateEveryMs = parseDateTimeEnq(body) * 1000;
        this.dateNext = now + this.dateEveryMs;
        this.queue(session, dateTime(this.wallMs()));
        break;
      default:
        break;
    }
  }

  /** Every wanted programme whose PMT is known, as one list (only, or first … last). */
  private sendList(): void {
    const pmts = [...this.pmts.values()];
    if (pmts.length === 0) return;
    this.listSent = true;
    this.sendCaPmt(pmts, null);
  }

  /** Each programme twice: a query (the module answers with ca_pmt_reply: whether it can
   *  descramble it), then ok_descrambling. `list` null: the programmes are the whole list. */
  private sendCaPmt(pmts: Pmt[], list: number | null): void {
    const position = (i: number) =>
      list ??
      (pmts.length === 1
        ? LIST.only
        : i === 0
          ? LIST.first
          : i === pmts.length - 1
            ? LIST.last
            : LIST.more);
    for (const cmd of [CMD.query, CMD.okDescrambling])
      pmts.forEach((pmt, i) => {
        this.queue(this.caSession, buildCaPmt(pmt, position(i), cmd));
        this.caPmtsSent++;
      });
    for (const pmt of pmts) {
      const p = this.programmes.get(pmt.programNumber)!;
      p.state = 'sent';
      p.pmtVersion = pmt.version;
      delete p.caEnable;
      delete p.reason;
    }
  }

  private reply(body: Buffer): void {
    const r = parseCaPmtReply(body);
    const p = r && this.programmes.get(r.programNumber);
    if (!r || !p) return;
    // The programme's answer, else the worst of its streams' (one refused stream refuses it).
    const enable =
      r.enable ??
      r.streams.map((s) => s.enable).find((e) => e !== null && e !== CA_ENABLE.possible) ??
      r.streams[0]?.enable ??
      null;
    if (enable === null) return;
    p.caEnable = enable;
    if (enable === CA_ENABLE.possible) {
      p.state = 'descrambling';
      delete p.reason;
    } else {
      p.state = 'refused';
      p.reason = REFUSAL[enable] ?? `CA_enable 0x${enable.toString(16)}`;
    }
  }
}

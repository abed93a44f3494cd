// Types of offlinebox's JavaScript client (index.js). The shapes follow
// api/openapi.yaml (HTTP) and api/asyncapi.yaml (the live channel).

export type ConvType = "direct" | "group";
export type Kind = "message" | "member_join" | "member_leave";

/** The device a client speaks for: own means the token names none and the
 * client sends device_id itself. */
export interface Device { id: string; own: boolean; }

export interface Message {
  conv_id: string; seq: number; epoch?: number; write_time_ms: number; client_msg_id: string;
  conv_type: ConvType; kind: Kind; sender: string; recipients?: string[]; mentions?: string[];
  mention_all?: boolean; content_type?: string; text?: string; body?: string; send_time_ms?: number;
}

/** A record for POST /v1/messages. */
export interface Outgoing {
  client_msg_id: string; conv_id: string; conv_type: ConvType; kind?: Kind; recipients?: string[];
  content_type?: string; body?: string; text?: string; mentions?: string[]; mention_all?: boolean;
  role?: "member" | "admin" | "owner"; qos?: "at_most_once" | "at_least_once"; send_time_ms?: number;
}

export interface Cursor { seq: number; epoch: number; }
export interface Ack { conv_id: string; seq: number; epoch: number; }
export interface ReadReceipt { conv_id: string; seq: number; epoch?: number; }

export interface Preview { seq: number; sender: string; text?: string; ts: number; }
export interface Conversation {
  conv_id: string; kind: ConvType; large?: boolean; unread: number; last_seq: number; read_seq: number;
  last_active_ms: number; preview?: Preview; mentions?: number; acked_seq?: number; left?: boolean;
  peer_delivered_seq?: number; peer_read_seq?: number; epoch?: number;
}
export interface ConversationList { conversations?: Conversation[]; next?: string; }

export interface SyncConversation {
  conv_id: string; kind: ConvType; epoch: number; max_seq: number; messages?: Message[];
  rebase?: boolean; rebase_reason?: string; gap?: unknown; incomplete?: boolean; [k: string]: unknown;
}
export interface Mention { message: Message; [k: string]: unknown; }
export interface SyncResponse {
  conversations?: SyncConversation[]; summaries?: unknown[]; omitted?: number; mentions?: Mention[];
  mentions_more?: boolean; mentions_next?: string; [k: string]: unknown;
}
export interface Page { conv_id: string; epoch?: number; conv_type?: ConvType; messages?: Message[]; incomplete?: boolean; first_seq?: number; [k: string]: unknown; }
export interface SendResponse { client_msg_id?: string; [k: string]: unknown; }
export interface Receipts { conv_id?: string; seq?: number; members?: number | null; delivered?: number | null; read?: number | null; large?: boolean; [k: string]: unknown; }
export interface Members { conv_id: string; count: number; members: string[]; truncated: boolean; }
export interface Rejection { client_msg_id: string; conv_id?: string; reason: string; at_ms: number; [k: string]: unknown; }
export interface Rejections { rejections?: Rejection[]; [k: string]: unknown; }

/** An answer that was not 2xx (status 0: no answer at all). */
export class ApiError extends Error {
  constructor(status: number, code: string, field: string, message: string, retryAfterMs: number);
  status: number; code: string; field: string; retryAfterMs: number;
  /** Whether the same call may succeed later (no answer, 429, 5xx but 501). */
  readonly retryable: boolean;
}

export interface ApiOptions {
  /** The server's origin, e.g. "http://127.0.0.1:8080"; "" (the default) in a page it serves. */
  baseUrl?: string;
  fetch?: typeof fetch;
}

/** What one sync answer's handler returns: how many it stored, what to ack. */
export interface Applied { stored: number; acks: Ack[]; }
export interface CatchUp {
  cursors(): Promise<Record<string, Cursor>> | Record<string, Cursor>;
  apply(resp: SyncResponse): Promise<Applied> | Applied;
  acked?(acks: Ack[]): Promise<void> | void;
  rounds?: number;
}

export class Api {
  constructor(token: string, device: Device, opts?: ApiOptions);
  token: string; device: Device; baseUrl: string;
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  static fillSlices<T>(answer: T): T;
  static retry<T>(fn: () => Promise<T>, attempts?: number): Promise<T>;
  static backoff(attempt: number, err?: ApiError | unknown): number;
  conversations(limit: number, cursor?: string): Promise<ConversationList>;
  sync(cursors: Record<string, Cursor>, mentionsAfter?: string, limit?: number): Promise<SyncResponse>;
  ack(acks: Ack[]): Promise<unknown>;
  read(receipts: ReadReceipt[]): Promise<unknown>;
  send(m: Outgoing): Promise<SendResponse>;
  receipts(conv: string, seq: number): Promise<Receipts>;
  /** Who belongs to conv now (at most 500 named; count is the whole). */
  members(conv: string): Promise<Members>;
  rejections(sinceMs: number): Promise<Rejections>;
  newest(conv: string, limit: number): Promise<Page>;
  before(conv: string, before: number, limit: number): Promise<Page>;
  history(conv: string, before: number, limit: number): Promise<Page>;
  catchUp(c: CatchUp): Promise<{ news: boolean; messages: number; rounds: number }>;
}

export function sleep(ms: number): Promise<void>;
/** The claims of a token (not verified: the server does that). */
export function claimsOf(token: string): { sub?: string; dev?: string; exp?: number; [k: string]: unknown };
/** "d-" and the two user ids in byte order, joined by "-". */
export function directConvId(a: string, b: string): string;
export function textMessage(m: { convId: string; convType: ConvType; text: string; to?: string; clientMsgId?: string }): Outgoing;
export function groupFounding(m: { convId: string; sender: string; members: string[]; clientMsgId?: string }): Outgoing;

export interface ReceiptFrame { type: "receipt"; conv_id: string; seq?: number; members?: number; delivered?: number; read?: number; peer_read_seq?: number; peer_delivered_seq?: number; [k: string]: unknown; }
export interface RejectedFrame { type: "rejected"; client_msg_id: string; conv_id?: string; reason: string; at_ms?: number; [k: string]: unknown; }
export interface Frame { type: string; [k: string]: unknown; }

export interface LiveHooks {
  onNews?(): void;
  onPush?(m: Message): Promise<Ack | null> | Ack | null;
  onReceipt?(f: ReceiptFrame): void;
  onRejected?(f: RejectedFrame): void;
  onState?(open: boolean): void;
  onFrame?(f: Frame): void;
}
export interface Live {
  readonly open: boolean; readonly stopped: boolean;
  send(frame: Frame): void;
  stop(): void;
}
export function connectLive(api: Api, hooks: LiveHooks, opts?: { WebSocket?: typeof WebSocket }): Live;

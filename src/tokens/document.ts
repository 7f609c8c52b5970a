import type { TokenRecord } from '../db/repositories.js'

/** The token metadata object of the wire (specification 2.2). */
export interface TokenView {
  id: string
  usage: 'pk' | 'sk'
  client: 'api'
  default: boolean
  scopes: string[]
  note: string
  created: string
  modified: string
  allowedUrls?: string[]
  /** Tessera: the IP ranges it may be used from; absent when not restricted. */
  allowedIps?: string[]
  token?: string
}

/** The wire object of a record, without its token string; `allowedUrls` only when restricted. */
export function tokenView(record: TokenRecord): TokenView {
  const view: TokenView = {
    id: record.id,
    usage: record.usage,
    client: 'api',
    default: record.isDefault,
    scopes: record.scopes,
    note: record.note,
    created: record.created,
    modified: record.modified,
  }
  if (record.allowedUrls !== null) view.allowedUrls = record.allowedUrls
  if (record.allowedIps != null) view.allowedIps = record.allowedIps
  return view
}

/** Adds `token` to a stored document (a JSON object) without parsing it again. */
export const withToken = (document: string, token: string) =>
  `${document.slice(0, -1)},"token":${JSON.stringify(token)}}`

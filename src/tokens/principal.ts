import type { NamedLimit } from '../ratelimit/named.js'
import type { Usage } from './codec.js'

/** The validated token a request is made with: who it acts for and what it may do. */
export interface Principal {
  usage: Usage
  username: string
  scopes: ReadonlySet<string>
  /** pk and sk: the token's id. */
  tokenId?: string
  /** tk: expiry in epoch seconds; pk/sk: its end of life, when it has one. */
  exp?: number
  /**
   * pk/sk, rolled: when its grace ends (epoch ms). Until then it may make nothing that outlives
   * that (creationRefusal, TokenRecords.refuseRetiring).
   */
  retiresAt?: number
  /**
   * pk/sk: a child token (docs/machines.md). What it makes is its own child, it changes only
   * itself and its descendants, lists only its children, and makes no temporary token (one
   * would outlive it).
   */
  child?: true
  /** A token restricted to IP ranges: whether a client address is in them. */
  allowedIps?: (ip: string) => boolean
  /** pk/sk: the token's own named rate limits, on top of its account's (docs/ratelimits.md). */
  limits?: readonly NamedLimit[]
  /** The account's rate-limit key (`user:<username>`), built once per principal. */
  rateKey?: string
  /** The usage meter's key of (account, token id), built once per principal (usage/meter). */
  meterKey?: string
}

/** The rate-limit key of the account a principal acts for. */
export const rateKeyOf = (principal: Principal): string =>
  principal.rateKey ?? `user:${principal.username}`

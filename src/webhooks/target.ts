import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { ApiError } from '../errors.js'
import { classifyAddress } from './address.js'

/** Why an endpoint URL may not be posted to: its sentence is the `details`, and an attempt's error. */
const refused = (why: string) => new ApiError('badWebhookUrl', why)

export interface ResolvedAddress {
  address: string
  family: number
}

/** Every address of a host name, as the system resolver gives them. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>

export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true })

const maxUrlLength = 2048

/** The host without the brackets of an IPv6 literal. */
export const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1')

/**
 * An endpoint URL as stored (its `href`, at most 2,048 characters): absolute https (http only
 * with WEBHOOK_ALLOW_PRIVATE, for a local receiver), no credentials (the signature is the
 * receiver's proof), no fragment.
 */
export function parseEndpointUrl(text: string, allowPrivate: boolean): URL {
  if (text.length > maxUrlLength) throw refused(`url is longer than ${maxUrlLength}`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw refused('url is not an absolute URL')
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw refused(
      allowPrivate ? 'url must be an https:// or http:// URL' : 'url must be an https:// URL',
    )
  }
  if (url.username !== '' || url.password !== '') {
    throw refused('url must not carry a user name or password')
  }
  if (bareHost(url) === '') throw refused('url has no host')
  url.hash = ''
  // What is stored is the normalised href, which percent-encoding (and punycode) can make
  // several times longer than the text given.
  if (url.href.length > maxUrlLength) {
    throw refused(`url is longer than ${maxUrlLength} once normalised`)
  }
  return url
}

function refusal(host: string, address: string, kind: string) {
  const what = `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address`
  return refused(
    host === address
      ? `url's host ${address} is ${what}`
      : `url's host ${host} resolves to ${what} (${address})`,
  )
}

/**
 * The addresses to connect to for `url`: every address its host resolves to must be public
 * unless private ones are allowed (a host with one private address among public ones is
 * refused: which one a connection gets is not ours to choose). The caller connects to one of
 * these, never resolving again, so that a rebinding DNS answer cannot slip in between.
 */
export async function resolveTarget(
  url: URL,
  allowPrivate: boolean,
  resolve: Resolver = systemResolver,
): Promise<ResolvedAddress[]> {
  const host = bareHost(url)
  const literal = isIP(host)
  let addresses: ResolvedAddress[]
  if (literal !== 0) addresses = [{ address: host, family: literal }]
  else {
    try {
      addresses = await resolve(host)
    } catch (err) {
      const code = (err as { code?: string }).code ?? (err as Error).message
      throw refused(`url's host ${host} does not resolve (${code})`)
    }
    if (addresses.length === 0) throw refused(`url's host ${host} does not resolve`)
  }
  if (allowPrivate) return addresses
  for (const { address } of addresses) {
    const kind = classifyAddress(address) ?? 'unknown'
    if (kind !== 'public') throw refusal(host, address, kind)
  }
  return addresses
}

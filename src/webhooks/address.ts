import { isIPv4, isIPv6 } from 'node:net'

/**
 * What an IP address is, for the webhooks' defence against server-side request forgery: only a
 * `public` address may be posted to unless WEBHOOK_ALLOW_PRIVATE is set. Parsed by hand rather
 * than with `net.BlockList`, whose handling of IPv4-mapped IPv6 changed across Node versions.
 */
export type AddressKind =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'multicast'
  | 'reserved'

type Range = [prefix: number[], bits: number, kind: AddressKind]

const v4Ranges: Range[] = [
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  // Carrier-grade NAT (RFC 6598): a provider's internal network.
  [[100, 64, 0, 0], 10, 'private'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 0, 2, 0], 24, 'reserved'],
  [[192, 88, 99, 0], 24, 'reserved'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'],
  [[198, 51, 100, 0], 24, 'reserved'],
  [[203, 0, 113, 0], 24, 'reserved'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
]

const v6Ranges: Range[] = [
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfc], 7, 'private'],
  [[0xff], 8, 'multicast'],
  // IETF protocol assignments (Teredo among them), documentation (two prefixes).
  [[0x20, 0x01, 0x00, 0x00], 23, 'reserved'],
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'],
  [[0x3f, 0xff], 20, 'reserved'],
]

const within = (bytes: number[], prefix: number[], bits: number) => {
  for (let i = 0; i * 8 < bits; i++) {
    const take = Math.min(8, bits - i * 8)
    const mask = (0xff << (8 - take)) & 0xff
    if (((bytes[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false
  }
  return true
}

function parseV4(text: string): number[] {
  return text.split('.').map(Number)
}

/** 16 bytes; `text` is valid IPv6 (`isIPv6`), without a zone. */
function parseV6(text: string): number[] {
  const parse = (part: string | undefined) => {
    const groups: number[] = []
    for (const group of part ? part.split(':') : []) {
      if (group.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = parseV4(group)
        groups.push((a << 8) | b, (c << 8) | d)
      } else groups.push(Number.parseInt(group, 16))
    }
    return groups
  }
  const [before, after] = text.split('::')
  const head = parse(before)
  const tail = parse(after)
  const groups =
    after === undefined ? head : [...head, ...Array(8 - head.length - tail.length).fill(0), ...tail]
  return groups.flatMap((g) => [g >> 8, g & 0xff])
}

function classifyV4(bytes: number[]): AddressKind {
  for (const [prefix, bits, kind] of v4Ranges) if (within(bytes, prefix, bits)) return kind
  return 'public'
}

const isZero = (bytes: number[], from: number, to: number) =>
  bytes.slice(from, to).every((b) => b === 0)

function classifyV6(bytes: number[]): AddressKind {
  // ::/96 (unspecified, loopback and the old IPv4-compatible form) and ::ffff:0:0/96 (mapped)
  // reach the IPv4 address they carry.
  if (
    isZero(bytes, 0, 10) &&
    (isZero(bytes, 10, 12) || (bytes[10] === 0xff && bytes[11] === 0xff))
  ) {
    if (isZero(bytes, 0, 15) && bytes[15] === 1) return 'loopback'
    if (isZero(bytes, 0, 16)) return 'unspecified'
    return classifyV4(bytes.slice(12))
  }
  // NAT64 (64:ff9b::/96) reaches the IPv4 address it carries; its local-use /48 stays inside.
  if (within(bytes, [0x00, 0x64, 0xff, 0x9b], 32)) {
    return isZero(bytes, 4, 12) ? classifyV4(bytes.slice(12)) : 'private'
  }
  // 6to4 (2002::/16) carries the IPv4 address of its relay's far end.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return classifyV4(bytes.slice(2, 6))
  for (const [prefix, bits, kind] of v6Ranges) if (within(bytes, prefix, bits)) return kind
  // Outside 2000::/3 nothing is global unicast today.
  if (((bytes[0] ?? 0) & 0xe0) !== 0x20) return 'reserved'
  return 'public'
}

/** The kind of an IPv4 or IPv6 address (brackets and a zone are ignored); undefined if neither. */
export function classifyAddress(address: string): AddressKind | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '')
  if (isIPv4(bare)) return classifyV4(parseV4(bare))
  if (isIPv6(bare)) return classifyV6(parseV6(bare))
  return undefined
}

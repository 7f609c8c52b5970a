const timestampShape =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:?\d{2})?$/

/** RFC 3339 / ISO 8601 with Z, an offset, or no zone (UTC); epoch milliseconds or undefined. */
export function parseTimestamp(value: string): number | undefined {
  const m = timestampShape.exec(value)
  if (m === null) return undefined
  const [, y, mo, d, h, mi, s, frac = '', zone = 'Z'] = m
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}`
  const ms = Date.parse(`${iso}Z`)
  // Date.parse rolls 31 February over into March; a real date survives the round trip.
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== iso.slice(0, 19)) {
    return undefined
  }
  if (zone === 'Z' || zone === 'z') return ms
  const sign = zone[0] === '-' ? -1 : 1
  const digits = zone.slice(1).replace(':', '')
  const hours = Number(digits.slice(0, 2))
  const minutes = Number(digits.slice(2))
  if (hours > 23 || minutes > 59) return undefined
  return ms - sign * (hours * 60 + minutes) * 60_000
}

const dayMs = 86_400_000
// 9999-12-31T23:59:59.999Z: past it toISOString writes six-digit years.
const lastFourDigitMs = 253_402_300_799_999
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`)
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`)

// Requests in the same millisecond (a batch of creates) format the same instant; instants of the
// same day share its date. V8's toISOString formats through snprintf, about 7,000 instructions a
// call (2 % of a create): here only once a day.
let lastMs = Number.NaN
let lastIso = ''
let dayStart = Number.NaN
let dayPrefix = ''
/** `new Date(ms).toISOString()`, for whole milliseconds. */
export const isoTime = (ms: number) => {
  if (ms === lastMs) return lastIso
  // Fractions, NaN (a RangeError) and instants before 1970 or past 9999: V8's own.
  if (!Number.isInteger(ms) || ms < 0 || ms > lastFourDigitMs) return new Date(ms).toISOString()
  let rest = ms - dayStart
  if (!(rest >= 0 && rest < dayMs)) {
    const iso = new Date(ms).toISOString()
    dayStart = ms - (ms % dayMs)
    dayPrefix = iso.slice(0, 11)
    rest = ms - dayStart
  }
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  lastIso = `${dayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(rest - seconds * 1000)}Z`
  lastMs = ms
  return lastIso
}

import type { LogMode } from '../../verification/log.js'
import type { LatencyBucket } from '../../verification/verifications.js'
import { type Html, html } from './html.js'
import type { Period } from './periods.js'
import { count } from './usage.js'

/** Units of the chart's width per bucket: the outcome chart's, so the two line up. */
const slot = 10
/** The top and bottom margins inside the chart, so a line at the peak or at 0 stays visible. */
const margin = 2

/** Microseconds as milliseconds, to the hundredth. */
export const msText = (us: number) => (us / 1000).toFixed(2)

const startText = (period: Period, ms: number) => {
  const iso = new Date(ms).toISOString()
  return period.resolution === 'day' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`
}

/**
 * One series as a step line: a level across each bucket that had rows, joined to the next when
 * that one had rows too, broken where none were timed (no line drawn through a gap).
 */
function steps(
  period: Period,
  byStart: ReadonlyMap<number, LatencyBucket>,
  peak: number,
  pick: (b: LatencyBucket) => number,
) {
  const y = (v: number) => Math.round((margin + (1 - v / peak) * (100 - 2 * margin)) * 100) / 100
  let d = ''
  let joined = false
  period.starts.forEach((start, i) => {
    const b = byStart.get(start)
    if (b === undefined) {
      joined = false
      return
    }
    d += `${joined ? 'L' : 'M'}${i * slot} ${y(pick(b))}L${(i + 1) * slot} ${y(pick(b))}`
    joined = true
  })
  return d
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** Labels under the chart, as the outcome chart has them (its stylesheet's grid of ticks). */
function axis(period: Period) {
  const every = period.resolution === 'day' ? 5 : 6
  const ticks = period.starts.filter((_, i) => i % every === 0)
  const label = (ms: number) => {
    const d = new Date(ms)
    const date = `${months[d.getUTCMonth()]} ${d.getUTCDate()}`
    return period.resolution === 'day' ? date : `${date}, ${d.toISOString().slice(11, 16)}`
  }
  return html`<p class="chart-axis ticks-${ticks.length}">${ticks.map((t) => html`<span>${label(t)}</span>`)}</p>`
}

const legend = html`<ul class="legend">
  <li><span class="line-swatch p50" aria-hidden="true"></span>p50 (half the requests were faster)</li>
  <li><span class="line-swatch p99" aria-hidden="true"></span>p99 (all but 1 in 100 were faster)</li>
</ul>`

/** The chart's figures as a table: a row per bucket in which requests were timed. */
function table(period: Period, found: readonly LatencyBucket[], unit: string) {
  return html`<details class="usage-table">
  <summary>Latency by ${unit} as a table</summary>
  <div class="scroll" role="region" aria-label="Latency by ${unit}" tabindex="0">
  <table class="latency">
  <caption>Latency by ${unit}, ${period.label}, oldest first (${unit}s without requests left out)</caption>
  <thead><tr><th scope="col">${unit === 'day' ? 'Day' : 'Hour'} (UTC)</th><th scope="col">Requests</th><th scope="col">p50 (ms)</th><th scope="col">p99 (ms)</th></tr></thead>
  <tbody>
  ${found.map((b) => html`<tr><th scope="row">${startText(period, b.at)}</th><td class="number">${count(b.count)}</td><td class="number">${msText(b.p50)}</td><td class="number">${msText(b.p99)}</td></tr>`)}
  </tbody>
  </table>
  </div>
</details>`
}

/** What the Usage page shows of the request log's durations. */
export interface LatencyShown {
  /** The buckets in which requests were timed, oldest first. */
  buckets: readonly LatencyBucket[]
  mode: LogMode
  retentionDays: number
}

/**
 * How long Tessera took to decide, p50 and p99 per bucket of the period (the request log's
 * durations, ctx.verifications.latency): a summary in words, step lines drawn on the server as
 * SVG (no script, no inline style), their key, and the same figures as a table.
 */
export function latencyChart(v: LatencyShown & { period: Period }): Html {
  const { period } = v
  const unit = period.resolution === 'day' ? 'day' : 'hour'
  const kept = period.starts.length * (unit === 'day' ? 1 : 1 / 24) > v.retentionDays
  const retention = kept
    ? html`<p class="hint">Requests are kept for ${v.retentionDays} days: older ${unit}s have none.</p>`
    : ''
  const inPeriod = v.buckets.filter((b) => period.starts.includes(b.at))
  const timed = inPeriod.reduce((n, b) => n + b.count, 0)
  if (timed === 0) {
    const why =
      v.mode === 'off'
        ? 'The request log is off (VERIFICATION_LOG=off): there is no latency to chart.'
        : `Nothing to chart: no request was timed in the ${period.label}.`
    return html`<p class="usage-summary" id="latency-summary"><strong>0</strong> requests timed in the ${period.label}.</p><p class="chart-empty">${why}</p>${retention}`
  }
  const slowest = inPeriod.reduce((a, b) => (b.p99 > a.p99 ? b : a))
  const peak = Math.max(slowest.p99, 1)
  const byStart = new Map(inPeriod.map((b) => [b.at, b]))
  const width = period.starts.length * slot
  const refused = v.mode === 'refused' ? ' (refused requests only: VERIFICATION_LOG=refused)' : ''
  return html`<p class="usage-summary" id="latency-summary"><strong>${count(timed)}</strong> request${timed === 1 ? '' : 's'} timed in the ${period.label}${refused}. Slowest ${unit}: p99 ${msText(slowest.p99)} ms, p50 ${msText(slowest.p50)} ms, ${startText(period, slowest.at)} UTC.</p>${retention}
<div class="chart">
  <p class="chart-scale">Top ${msText(peak)} ms · times in UTC</p>
  <svg class="latency-chart" role="img" aria-label="Latency by ${unit}, p50 and p99, ${period.label}" aria-describedby="latency-summary" viewBox="0 0 ${width} 100" preserveAspectRatio="none" focusable="false">
    <line class="grid" x1="0" x2="${width}" y1="${margin}" y2="${margin}" vector-effect="non-scaling-stroke"></line>
    ${inPeriod.map((b) => html`<g data-start="${new Date(b.at).toISOString()}"><title>${startText(period, b.at)} UTC: p50 ${msText(b.p50)} ms, p99 ${msText(b.p99)} ms, ${count(b.count)} request${b.count === 1 ? '' : 's'}</title><rect class="hover" x="${period.starts.indexOf(b.at) * slot}" y="0" width="${slot}" height="100"></rect></g>`)}
    <path class="p99" d="${steps(period, byStart, peak, (b) => b.p99)}" vector-effect="non-scaling-stroke"></path>
    <path class="p50" d="${steps(period, byStart, peak, (b) => b.p50)}" vector-effect="non-scaling-stroke"></path>
    <line class="axis" x1="0" x2="${width}" y1="100" y2="100" vector-effect="non-scaling-stroke"></line>
  </svg>
  ${axis(period)}
  ${legend}
</div>
${table(period, inPeriod, unit)}`
}

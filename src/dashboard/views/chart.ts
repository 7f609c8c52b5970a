import { type Outcome, outcomes } from '../../usage/outcomes.js'
import { type Html, html } from './html.js'
import { type Bucket, type Period, sum, totalsOf } from './periods.js'
import { count } from './usage.js'

/** Outcomes as people read them, in the order of `outcomes`. */
export const outcomeNames: Record<Outcome, string> = {
  valid: 'Valid',
  malformed: 'Malformed',
  invalid: 'Invalid',
  expired: 'Expired',
  revoked: 'Revoked',
  rate_limited: 'Rate limited',
  url_not_allowed: 'URL not allowed',
  ip_not_allowed: 'IP not allowed',
  scope_missing: 'Scope missing',
  credits_exhausted: 'Credits exhausted',
}

const validIndex = 0
/** Units of the chart's width per bucket, of which a bar takes all but the gap. */
const slot = 10
const gap = 2
const round = (n: number) => Math.round(n * 100) / 100

const startText = (period: Period, ms: number) => {
  const iso = new Date(ms).toISOString()
  return period.resolution === 'day' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`
}

/** What one bucket came to, in words: its tooltip. */
const bucketText = (period: Period, b: Bucket) => {
  const parts = outcomes.flatMap((o, i) =>
    (b.counts[i] ?? 0) > 0 ? [`${count(b.counts[i] ?? 0)} ${outcomeNames[o].toLowerCase()}`] : [],
  )
  return `${startText(period, b.start)} UTC: ${parts.length === 0 ? 'none' : parts.join(', ')}`
}

/**
 * A bar's pieces as heights in hundredths of the chart: each its share of the peak, but at least
 * 1, so that three refusals stay visible beside ten thousand valid verifications; the larger
 * pieces give up what that adds when the bar would overflow.
 */
function heights(counts: readonly number[], peak: number): number[] {
  const raw = counts.map((n) => (n === 0 ? 0 : (n / peak) * 100))
  const floored = raw.map((h) => (h > 0 && h < 1 ? 1 : h))
  const total = sum(floored)
  if (total <= 100) return floored
  const small = sum(floored.filter((_, i) => (raw[i] ?? 0) < 1))
  const large = sum(raw.filter((h) => h >= 1))
  return floored.map((h, i) => ((raw[i] ?? 0) >= 1 ? (h * (100 - small)) / large : h))
}

/**
 * One bar per bucket, its outcomes stacked from the bottom (valid first) up to the bucket's
 * total as a share of the peak. The edges are rounded from the running sums, so the pieces of a
 * bar meet without gaps. Colours come from the stylesheet (`.outcome-<name>`), for both themes.
 */
export function stacks(period: Period, buckets: readonly Bucket[]) {
  const peak = Math.max(0, ...buckets.map((b) => sum(b.counts)))
  return {
    peak,
    bars: buckets.map((b, x) => {
      const tall = peak === 0 ? [] : heights(b.counts, peak)
      let below = 0
      const pieces = outcomes.flatMap((outcome, i) => {
        const n = b.counts[i] ?? 0
        if (n === 0 || peak === 0) return []
        const bottom = round(100 - below)
        below += tall[i] ?? 0
        const top = round(100 - below)
        return [{ outcome, count: n, y: top, height: round(bottom - top) }]
      })
      return { x: x * slot + gap / 2, start: b.start, title: bucketText(period, b), pieces }
    }),
  }
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
/** A bucket every this many gets a label under the chart: 4 labels by hour, 6 by day. */
const tickEvery = { hour: 6, day: 5 }

/**
 * Labels under the chart, each at the left of its bucket: the grid's columns are as wide as
 * that many bars, so they line up with the bars at any width without inline styles.
 */
function axis(period: Period, buckets: readonly Bucket[]) {
  const every = tickEvery[period.resolution]
  const ticks = buckets.filter((_, i) => i % every === 0)
  const label = (ms: number) => {
    const d = new Date(ms)
    const date = `${months[d.getUTCMonth()]} ${d.getUTCDate()}`
    return period.resolution === 'day'
      ? date
      : `${date}, ${new Date(ms).toISOString().slice(11, 16)}`
  }
  return html`<p class="chart-axis ticks-${ticks.length}">${ticks.map((b) => html`<span>${label(b.start)}</span>`)}</p>`
}

/** The totals of the period in words, each outcome beside its colour: the chart's key. */
function legend(totals: readonly number[]) {
  return html`<ul class="legend">
  ${outcomes.flatMap((o, i) =>
    (totals[i] ?? 0) === 0
      ? []
      : [
          html`<li><span class="swatch outcome-${o}" aria-hidden="true"></span>${outcomeNames[o]} <strong>${count(totals[i] ?? 0)}</strong></li>`,
        ],
  )}
</ul>`
}

/** The chart's figures as a table: a row per bucket, a column per outcome that occurred. */
function table(period: Period, buckets: readonly Bucket[], totals: readonly number[]) {
  const shown = outcomes.flatMap((o, i) => ((totals[i] ?? 0) > 0 ? [{ o, i }] : []))
  const unit = period.resolution === 'day' ? 'day' : 'hour'
  return html`<details class="usage-table">
  <summary>Verifications by ${unit} as a table</summary>
  <div class="scroll" role="region" aria-label="Verifications by ${unit}" tabindex="0">
  <table class="buckets">
  <caption>Verifications by ${unit} and outcome, ${period.label}, oldest first</caption>
  <thead><tr><th scope="col">${unit === 'day' ? 'Day' : 'Hour'} (UTC)</th>${shown.map(({ o }) => html`<th scope="col">${outcomeNames[o]}</th>`)}<th scope="col">Total</th></tr></thead>
  <tbody>
  ${buckets.map((b) => html`<tr><th scope="row">${startText(period, b.start)}</th>${shown.map(({ i }) => html`<td class="number">${count(b.counts[i] ?? 0)}</td>`)}<td class="number">${count(sum(b.counts))}</td></tr>`)}
  </tbody>
  </table>
  </div>
</details>`
}

/**
 * Verifications by outcome over a period: a summary in words, stacked bars drawn on the server
 * as SVG (no script, no inline style), their key, and the same figures as a table.
 */
export function usageChart(period: Period, buckets: readonly Bucket[]): Html {
  const totals = totalsOf(buckets)
  const total = sum(totals)
  const valid = totals[validIndex] ?? 0
  const summary = html`<p class="usage-summary" id="usage-summary"><strong>${count(total)}</strong> verification${total === 1 ? '' : 's'} in the ${period.label}${total === 0 ? '' : total === valid ? ', all valid' : html`: ${count(valid)} valid, ${count(total - valid)} refused`}.</p>`
  if (total === 0) {
    return html`${summary}<p class="chart-empty">Nothing to chart: no verifications in the ${period.label}.</p>`
  }
  const chart = stacks(period, buckets)
  const width = buckets.length * slot
  const unit = period.resolution === 'day' ? 'day' : 'hour'
  return html`${summary}
<div class="chart">
  <p class="chart-scale">Peak ${count(chart.peak)} ${unit === 'day' ? 'a day' : 'an hour'} · times in UTC</p>
  <svg class="usage-chart" role="img" aria-label="Verifications by ${unit} and outcome, ${period.label}" aria-describedby="usage-summary" viewBox="0 0 ${width} 100" preserveAspectRatio="none" focusable="false">
    <line class="grid" x1="0" x2="${width}" y1="0" y2="0" vector-effect="non-scaling-stroke"></line>
    ${chart.bars.map(
      (bar) =>
        html`<g data-start="${new Date(bar.start).toISOString()}"><title>${bar.title}</title>${bar.pieces.map((p) => html`<rect class="bar outcome-${p.outcome}" x="${bar.x}" y="${p.y}" width="${slot - gap}" height="${p.height}" data-count="${p.count}"></rect>`)}</g>`,
    )}
    <line class="axis" x1="0" x2="${width}" y1="100" y2="100" vector-effect="non-scaling-stroke"></line>
  </svg>
  ${axis(period, buckets)}
  ${legend(totals)}
</div>
${table(period, buckets, totals)}`
}

/** Links to the periods of a page (`base` plus `?period=`), the current one marked. */
export function periodLinks(base: string, current: Period) {
  const link = (name: Period['name'], text: string) =>
    html`<a href="${base}?period=${name}"${current.name === name ? html` aria-current="true"` : ''}>${text}</a>`
  return html`<nav class="periods" aria-label="Period">${link('24h', 'Last 24 hours')} ${link('30d', 'Last 30 days')}</nav>`
}

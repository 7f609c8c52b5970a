import { time } from './forms.js'
import { type Html, html } from './html.js'

/** When a token was last validated, and how often per hour (ctx.usage). */
export interface Usage {
  lastUsed?: string
  /** `YYYY-MM-DDTHH` and the validations of that hour, hours without any left out. */
  hours: readonly { hour: string; count: number }[]
}

const hourMs = 3_600_000
const dayMs = 24 * hourMs
/** The chart's span: the hours the usage counter keeps (30 days), this hour included. */
export const chartHours = 30 * 24 + 1
/** Unused for longer than this (or never used, and created longer ago): worth a look. */
export const staleAfterMs = 90 * dayMs

const number = new Intl.NumberFormat('en-US')
export const count = (n: number) => number.format(n)

/** Last used, or created when never used, more than 90 days before `now`. */
export const isStale = (lastUsed: string | undefined, created: string, now: number) =>
  now - Date.parse(lastUsed ?? created) > staleAfterMs

/** The `Last used` of a token: the minute, or `never used`; and the 90-day mark. */
export function lastUsedText(lastUsed: string | undefined, created: string, now: number): Html {
  const when = lastUsed === undefined ? html`<span class="none">never used</span>` : time(lastUsed)
  const stale = isStale(lastUsed, created, now)
    ? html` <span class="mark stale">unused for 90 days</span>`
    : ''
  return html`${when}${stale}`
}

/** The chart's bars: one per hour with validations; x is the hour's place in the span. */
export function bars(usage: Usage, now: number) {
  const end = Math.floor(now / hourMs) * hourMs
  const start = end - (chartHours - 1) * hourMs
  const placed = usage.hours
    .map((h) => ({ ...h, x: (Date.parse(`${h.hour}:00:00.000Z`) - start) / hourMs }))
    .filter((h) => h.count > 0 && Number.isInteger(h.x) && h.x >= 0 && h.x < chartHours)
  const peak = Math.max(0, ...placed.map((h) => h.count))
  return {
    start,
    end,
    peak,
    total: placed.reduce((sum, h) => sum + h.count, 0),
    // Heights in hundredths of the chart; a single validation stays visible beside a peak.
    bars: placed.map((h) => ({
      ...h,
      height: Math.max(1, Math.round((h.count / peak) * 10_000) / 100),
    })),
  }
}

const hourText = (ms: number) => {
  const iso = new Date(ms).toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`
}

/**
 * Validations per hour over the last 30 days: inline SVG drawn on the server (no script, no
 * inline style: colours come from the stylesheet, so both themes hold), its summary in words,
 * and a table of the hours for those who cannot see it.
 */
export function usageChart(usage: Usage, now: number): Html {
  const chart = bars(usage, now)
  const last =
    usage.lastUsed === undefined ? html`never used` : html`last used ${time(usage.lastUsed)}`
  const summary = html`<p class="usage-summary" id="usage-summary"><strong>${count(chart.total)}</strong> validation${chart.total === 1 ? '' : 's'} in the last 30 days; ${last}.</p>`
  if (chart.bars.length === 0) {
    return html`${summary}<p class="chart-empty">No validations to chart in the last 30 days.</p>`
  }
  // A line at every midnight (UTC): the days of the month can be counted.
  const firstMidnight = Math.ceil(chart.start / dayMs) * dayMs
  const midnights: number[] = []
  for (let t = firstMidnight; t <= chart.end; t += dayMs) midnights.push((t - chart.start) / hourMs)
  return html`${summary}
<div class="chart">
  <p class="chart-scale">Peak ${count(chart.peak)} an hour</p>
  <svg class="usage-chart" role="img" aria-label="Validations per hour, last 30 days" aria-describedby="usage-summary" viewBox="0 0 ${chartHours} 100" preserveAspectRatio="none" focusable="false">
    ${midnights.map((x) => html`<line class="grid day" x1="${x}" x2="${x}" y1="0" y2="100" vector-effect="non-scaling-stroke"></line>`)}
    <line class="grid" x1="0" x2="${chartHours}" y1="0" y2="0" vector-effect="non-scaling-stroke"></line>
    ${chart.bars.map((b) => html`<rect class="bar" x="${b.x}" y="${Math.round((100 - b.height) * 100) / 100}" width="1" height="${b.height}" data-hour="${b.hour}" data-count="${b.count}"></rect>`)}
    <line class="axis" x1="0" x2="${chartHours}" y1="100" y2="100" vector-effect="non-scaling-stroke"></line>
  </svg>
  <p class="chart-axis"><span>${hourText(chart.start)} UTC</span><span>now</span></p>
</div>
<details class="usage-hours">
  <summary>Validations by hour (${count(chart.bars.length)} hour${chart.bars.length === 1 ? '' : 's'})</summary>
  <div class="scroll" role="region" aria-label="Hours with validations" tabindex="0">
  <table class="hours">
  <caption class="visually-hidden">Validations per hour, last 30 days, hours with validations only, newest first</caption>
  <thead><tr><th scope="col">Hour (UTC)</th><th scope="col">Validations</th></tr></thead>
  <tbody>
  ${[...chart.bars].reverse().map((b) => html`<tr><td>${time(`${b.hour}:00:00.000Z`)}</td><td class="number">${count(b.count)}</td></tr>`)}
  </tbody>
  </table>
  </div>
</details>`
}

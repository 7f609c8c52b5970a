import { describe, expect, it } from 'vitest'
import { safeNext, signInPath } from '../../src/dashboard/session.js'

describe('the page to go back to after signing in', () => {
  it('is a dashboard path, never another site', () => {
    expect(safeNext('/account/settings')).toBe('/account/settings')
    expect(safeNext('/account/tokens/new?x=1')).toBe('/account/tokens/new?x=1')
    expect(safeNext('https://evil.example/account')).toBe('/account')
    expect(safeNext('//evil.example/account')).toBe('/account')
    expect(safeNext('/account/\\evil')).toBe('/account')
  })

  it('is dropped when too long to fit a sign-in link into a header', () => {
    const long = `/account?before=${'%41'.repeat(4000)}`
    expect(safeNext(long)).toBe('/account')
    expect(signInPath(safeNext(long))).toBe('/account/sign-in')
    expect(safeNext(`/account?x=${'a'.repeat(1000)}`)).toHaveLength(1011)
  })
})

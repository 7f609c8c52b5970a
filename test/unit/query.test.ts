import { describe, expect, it } from 'vitest'
import { parseQuery } from '../../src/http/ahead/query.js'

describe('query string', () => {
  it('takes the first of repeated parameters and decodes names and values', () => {
    expect(parseQuery('limit=5&limit=7&note=a+b%20c&sort%62y=created')).toEqual({
      limit: '5',
      note: 'a b c',
      sortby: 'created',
    })
  })

  it('reads a name without a value as empty and skips empty pairs', () => {
    expect(parseQuery('&&start&limit=&=x&')).toEqual({ start: '', limit: '', '': 'x' })
    expect(parseQuery('')).toEqual({})
  })

  it('keeps a malformed escape as given', () => {
    expect(parseQuery('access_token=%E0%A4%A&x=%zz')).toEqual({
      access_token: '%E0%A4%A',
      x: '%zz',
    })
  })

  it('treats names of Object.prototype as plain names and never sets a prototype', () => {
    const query = parseQuery('toString=1&__proto__=x&constructor=2&hasOwnProperty=3')
    expect(query).toEqual({ toString: '1', constructor: '2', hasOwnProperty: '3' })
    expect(Object.getPrototypeOf(query)).toBe(Object.prototype)
  })
})

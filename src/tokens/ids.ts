import { randomAlnum } from '../ids.js'

export const newTokenId = () => `c${randomAlnum(24)}`

export const tokenIdPattern = /^c[a-z0-9]{24}$/

// A call to the server under test over TLS, trusting its certificate: {status, text, body}.
import { request } from 'node:https'

export function api(base, ca, method, route, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${route}`, { method, ca }, (res) => {
      let text = ''
      res.on('data', (d) => {
        text += d
      })
      res.on('end', () => resolve({ status: res.statusCode, text, body: text && JSON.parse(text) }))
    })
    req.on('error', reject)
    if (body) req.setHeader('content-type', 'application/json')
    req.end(body && JSON.stringify(body))
  })
}

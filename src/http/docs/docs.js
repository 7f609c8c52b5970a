// Starts Swagger UI (swagger-ui-bundle.js, loaded before this file) on the document the page
// names. A file of its own because the page's CSP allows no inline script.
const root = document.getElementById('docs')
const { SwaggerUIBundle } = window
if (root && SwaggerUIBundle) {
  SwaggerUIBundle({
    url: root.dataset.url,
    domNode: root,
    // Off: a deep link is an <a> inside the operation's <button>, which screen readers cannot
    // reach (axe: nested-interactive).
    deepLinking: false,
    // No request to validator.swagger.io: nothing on this page leaves this origin.
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    // The document's server is PUBLIC_URL; "Try it out" asks the server this page came from,
    // the one origin the page's CSP lets it reach (connect-src 'self'), whatever PUBLIC_URL is.
    requestInterceptor: (request) => {
      const url = new URL(request.url, window.location.href)
      if (url.origin !== window.location.origin) {
        request.url = `${window.location.origin}${url.pathname}${url.search}`
      }
      return request
    },
    // Swagger UI's list of servers is a <select> without a name (axe: select-name).
    onComplete: () => document.getElementById('servers')?.setAttribute('aria-label', 'Server'),
  })
}

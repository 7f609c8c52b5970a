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
  })
}

// The /docs page: Swagger UI over the service's own OpenAPI document. Served by the
// service, like every other asset of the page (no third-party origin, no inline script).
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
  });
});

/** The service version (the OpenAPI document, system_fingerprint). */
export const VERSION = "0.1.0";

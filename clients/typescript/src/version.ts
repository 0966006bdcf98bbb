/** The package version (test/client.test.ts checks it against package.json). */
export const VERSION = "0.1.0";

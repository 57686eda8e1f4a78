/** The key store's failures and refusals, as the admin should see them. */
import { HttpError } from "../../server/index.js";
import { KeyNameError, KeyNotFoundError, KeySettingError, KeyStoreError, QuotaValueError } from "../../store/index.js";

/**
 * The database could not take a key change (another process holds its lock past the server's
 * short wait, the disk is full): the admin may retry, so 503 with the cause rather than a 500.
 */
function storeUnavailable(error: KeyStoreError): HttpError {
  const retryAfter = error.failure === "locked" ? "1" : "30";
  return new HttpError(503, `the key store cannot be written right now: ${error.reason}`, { "retry-after": retryAfter });
}

/** A read the key store cannot answer now (Postgres restarting): 503, to retry. */
export async function storeRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof KeyStoreError)
      throw new HttpError(503, `the key store cannot be read right now: ${error.reason}`, { "retry-after": "5" });
    throw error;
  }
}

/** The store's refusals of a key change: 400 for a bad value, 404 for no such key, 503 to retry. */
export function keyChangeError(error: unknown): unknown {
  if (error instanceof KeyNameError || error instanceof QuotaValueError || error instanceof KeySettingError) {
    return new HttpError(400, error.message);
  }
  if (error instanceof KeyNotFoundError) return new HttpError(404, error.message);
  if (error instanceof KeyStoreError) return storeUnavailable(error);
  return error;
}

/**
 * The page's half of the access token: the server prints
 * `http://127.0.0.1:<port>/?token=…` on start; the page takes the token from
 * the address once, keeps it in localStorage (so a reload, a second tab and
 * the status page have it), takes it out of the address bar, and sends it as
 * `Authorization: Bearer <token>` on every API call (the SSE reader is fetch,
 * so the streams carry it too). A 401 means the token is missing or belongs
 * to an earlier launch: the page says to open the printed address again.
 */
import { useEffect, useState } from 'react'

const TOKEN_KEY = 'sandbox-web:token'
const UNAUTHORIZED_EVENT = 'sandbox-web:unauthorized'

/** What the page shows when the server refuses its token. */
export const UNAUTHORIZED_MESSAGE =
  'The server refused this page: it has no access token, or one from an earlier start. Open the address the server printed when it started (http://127.0.0.1:<port>/?token=…).'

/** A 401 from the API: retrying does not help, a new address from the server's output does. */
export class UnauthorizedError extends Error {
  constructor() {
    super(UNAUTHORIZED_MESSAGE)
    this.name = 'UnauthorizedError'
  }
}

/** Move `?token=` from the address into storage, replacing the history entry. Call once, before anything renders. */
export function takeTokenFromAddress(): void {
  const url = new URL(window.location.href)
  const token = url.searchParams.get('token')
  if (token === null) return
  try {
    if (token !== '') localStorage.setItem(TOKEN_KEY, token)
  } catch {
    // Storage refused (a private window with storage off): the API will answer 401 and the page says so.
  }
  url.searchParams.delete('token')
  window.history.replaceState(window.history.state, '', url)
}

function storedToken(): string | null {
  try {
    return localStorage.getItem(TOKEN_KEY)
  } catch {
    return null
  }
}

/**
 * `fetch` for this app's API: adds `Authorization: Bearer <token>` and, on a 401, tells the page
 * ({@link useUnauthorized}). The response is returned as it is.
 */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  const token = storedToken()
  if (token !== null) headers.set('authorization', `Bearer ${token}`)
  const response = await fetch(path, { ...init, headers })
  if (response.status === 401) window.dispatchEvent(new Event(UNAUTHORIZED_EVENT))
  return response
}

/** True once an API call of this page was refused for its token. */
export function useUnauthorized(): boolean {
  const [refused, setRefused] = useState(false)
  useEffect(() => {
    const refuse = () => setRefused(true)
    window.addEventListener(UNAUTHORIZED_EVENT, refuse)
    return () => window.removeEventListener(UNAUTHORIZED_EVENT, refuse)
  }, [])
  return refused
}

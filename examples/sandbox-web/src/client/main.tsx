/** The browser entry: `/status` is the status page, every other path the run page. The access token leaves the address first. */
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { RunPage } from './App.js'
import { takeTokenFromAddress } from './auth.js'
import { StatusPage } from './StatusPage.js'

takeTokenFromAddress()
createRoot(document.getElementById('root')!).render(<StrictMode>{window.location.pathname === '/status' ? <StatusPage /> : <RunPage />}</StrictMode>)

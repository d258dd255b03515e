/** The browser entry: `/status` is the status page, every other path the run page. */
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { RunPage } from './App.js'
import { StatusPage } from './StatusPage.js'

createRoot(document.getElementById('root')!).render(<StrictMode>{window.location.pathname === '/status' ? <StatusPage /> : <RunPage />}</StrictMode>)

// The message of a job whose wrapper ended before its header, on the words
// the engine and BusyBox ash were seen to write at the pids limit. Pure: no
// engine needed (provider.test.ts reaches the same path on a real engine).
import { describe, expect, it } from 'vitest'
import { JOB_WRAPPER, wrapperEndedMessage } from '../src/job.js'

describe('wrapperEndedMessage', () => {
  it("quotes the engine's refusal (which it writes to the exec's stdout) and names the pids limit", () => {
    const refusal = 'OCI runtime exec failed: exec failed: unable to start container process: read init-p: connection reset by peer: unknown'
    const message = wrapperEndedMessage('echo alive', refusal, 32)
    expect(message).toContain(`"echo alive": ${refusal}.`)
    expect(message).toMatch(/may be out of processes \(its pids limit of 32 \(dockerSandbox\(\{ resources: \{ pids \} \}\)\) reached/)
  })

  it("quotes the shell's failed fork without the wrapper script ash uses as its name, and says the limit is reached", () => {
    const message = wrapperEndedMessage('echo alive', `${JOB_WRAPPER}: line 3: can't fork: Resource temporarily unavailable`, 32)
    expect(message).toContain(`"echo alive": sh: line 3: can't fork: Resource temporarily unavailable. A fork failed`)
    expect(message).toMatch(/the pids limit of 32 .* is reached/)
    expect(message).not.toContain('tanstack-sandbox-job')
  })

  it('says when nothing was said, and without a pids limit blames only the image', () => {
    expect(wrapperEndedMessage('true', '', undefined)).toBe('The job wrapper ended before starting "true": no output. The image needs /bin/sh and /proc.')
  })
})

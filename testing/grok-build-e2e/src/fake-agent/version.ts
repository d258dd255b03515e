/** The fake agent's version: the folder name of the transcripts recorded from it. Bump it when the fake's behavior changes, so old recordings stay as they were. */
export const FAKE_GROK_VERSION = '0.1.0-fake'

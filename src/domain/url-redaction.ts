/**
 * URLs often carry keys: an RPC provider's in its path (`https://arb-mainnet.g.alchemy.com/v2/<key>`),
 * a database's password in its user info, a partner's token in its query. Any URL in a text bound for
 * a log line or for Temporal's history keeps its scheme, host and port, which is what an operator
 * needs to tell which endpoint failed, and loses the rest. Pure (no I/O, no Node API): the workflow
 * sandbox runs it too (src/temporal/failure-converter.ts).
 */

// scheme://[userinfo@]host[:port][/path][?query][#fragment], up to a space, quote or bracket.
const URL_IN_TEXT =
  /\b([a-z][a-z0-9+.-]*):\/\/([^\s/?#@"'<>()[\]]*@)?(\[[0-9a-f:.]*\](?::[0-9]*)?|[^\s/?#"'<>()[\]]*)([^\s"'<>()[\]]*)/gi;

const HOST_PORT = /^(?:\[[0-9a-f:.]*\]|[^:]*)(?::[0-9]*)?$/i;

export const REDACTED_URL_PART = '/[redacted]';

export function redactUrls(text: string): string {
  return text.replace(
    URL_IN_TEXT,
    (_url, scheme: string, userinfo: string | undefined, host: string, rest: string) => {
      // A host that is not host[:port] is a password cut short by a character it should have escaped.
      if (!HOST_PORT.test(host)) return `${scheme}://${REDACTED_URL_PART.slice(1)}`;
      const hidden = userinfo !== undefined || (rest !== '' && rest !== '/');
      return `${scheme}://${host}${hidden ? REDACTED_URL_PART : rest}`;
    },
  );
}

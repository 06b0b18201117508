// Table stakes as the client shows them: each player brings a stake to the table (held
// for the whole session), games follow one another at the table until one player holds
// both stakes or a player leaves between games, and no game may put at risk more than
// the smaller stake left (the game's `tableStakesMaxCube`). Pure functions of the
// messages as the gateway prints them (int64 as strings, every field printed); the
// server decides everything, these only say it.
import { formatMoney } from "/js/api.js";

/** The bring-in of a table's rules in minor units; 0 at an ordinary table. */
export function bringIn(rules) {
  return Number((rules && rules.tableStakesMinorUnits) || 0);
}

/** "table stakes 2.00 USD each" for a table-stakes table's rules, else "". */
export function stakesText(rules) {
  if (!bringIn(rules)) return "";
  return `table stakes ${formatMoney({ minorUnits: String(rules.tableStakesMinorUnits),
                                      currency: rules.stake.currency })} each`;
}

/** The cube cap of a table-stakes game, shown to both players; "" elsewhere. */
export function capText(game) {
  const cap = Number(game.tableStakesMaxCube || 0);
  return cap ? `cube capped at ${cap} by the table stakes` : "";
}

/** Why the player may not double now (the cube would pass this game's cap), or "". */
export function doubleRefusal(game) {
  const cap = Number(game.tableStakesMaxCube || 0);
  const doubled = Number(game.cubeValue || 1) * 2;
  if (!cap || doubled <= cap) return "";
  return `no double: the cube may not reach ${doubled} in this game (${capText(game)})`;
}

/** Each seated player's stake left at the table: [{accountId, text}], as money. */
export function stakesLeft(table) {
  const currency = table.rules.stake.currency;
  return (table.players || []).map((p) => ({
    accountId: p.accountId,
    text: formatMoney({ minorUnits: String(p.tableStakeLeftMinorUnits || "0"), currency }),
  }));
}

const CLOSED = "TABLE_STATUS_CLOSED";

/** Who asked to leave (the session ends once the game in play is settled), or "". */
export function leavingText(table, label) {
  if (!table.leavingAccountId || table.status === CLOSED) return "";
  return `${label(table.leavingAccountId)} leaves the table after this game`;
}

/** Whether the viewer may still ask to leave after the game in play. */
export function mayLeave(table, accountId) {
  return table.status === "TABLE_STATUS_PLAYING" && !table.leavingAccountId &&
    (table.players || []).some((p) => p.accountId === accountId);
}

/**
 * Where a finished game's session goes on: `{ next: gameId }` once the table started its
 * next game, `{ ended: text }` once the table closed (the server's reason with the
 * players shown by `label`, e.g. "table stakes: Ann holds both stakes"), else null (the
 * game is still being settled).
 */
export function sessionAfter(table, gameId, label) {
  if (table.status === CLOSED) {
    let reason = table.closeReason || "the table closed";
    for (const p of table.players || []) reason = reason.replaceAll(p.accountId, label(p.accountId));
    const games = Number(table.gamesPlayed || 0);
    return { ended: `Session over after ${games} game${games === 1 ? "" : "s"}: ${reason}` };
  }
  if (table.gameId && table.gameId !== gameId) return { next: table.gameId };
  return null;
}

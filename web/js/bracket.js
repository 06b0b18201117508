// A tournament's bracket laid out for drawing, and its standings in place order: pure
// functions of the API's Tournament (GET /v1/tournaments/{id}), no DOM, so they are
// tested alone (tests/integration/test_web_modules.py) and tournaments.js only draws.
//
// The service's bracket (services/tournaments/README.md, "Bracket") is a list of
// matches "r<round>m<n>" (n from 1 at the top), each with two seats, top first. A
// first-round match with one player and the decision "bye" holds a bye; an empty seat of
// a later round is the winner still to come from the previous round's match 2n-1 (top
// seat) or 2n (bottom seat).

const MATCH_ID = /^r(\d+)m(\d+)$/;

/** The round and the 1-based place from the top of a match id ("r2m1" -> [2, 1]). */
export function matchPlace(matchId) {
  const found = MATCH_ID.exec(matchId || "");
  return found ? [Number(found[1]), Number(found[2])] : [0, 0];
}

/** What a round is called, counted back from the final. */
export function roundTitle(round, rounds) {
  const fromFinal = rounds - round;
  if (fromFinal === 0) return "Final";
  if (fromFinal === 1) return "Semi-finals";
  if (fromFinal === 2) return "Quarter-finals";
  return `Round ${round}`;
}

function seatOf(match, seat, round) {
  const accountId = (match.players || [])[seat] || "";
  if (accountId) {
    const decided = Boolean(match.winnerAccountId) && match.decision !== "bye";
    return { kind: "player", accountId, won: match.winnerAccountId === accountId,
             lost: decided && match.winnerAccountId !== accountId };
  }
  if (match.decision === "bye") return { kind: "bye", accountId: "", won: false, lost: false };
  const [, place] = matchPlace(match.matchId);
  const from = round > 1 ? `r${round - 1}m${2 * place - 1 + seat}` : "";
  return { kind: "to come", accountId: "", from, won: false, lost: false };
}

/**
 * The bracket as columns, one per round (round 1 first), each with its matches from the
 * top: {round, title, matches: [{matchId, round, place, length, state, decision, gameId,
 * winner, seats: [{kind: "player" | "bye" | "to come", accountId, from, won, lost}] x2}]}.
 */
export function bracketColumns(bracket) {
  const matches = (bracket || []).map((match) => {
    const [round, place] = matchPlace(match.matchId);
    return { match, round: round || Number(match.round || 0), place };
  });
  const rounds = Math.max(0, ...matches.map((m) => m.round));
  const columns = [];
  for (let round = 1; round <= rounds; round++) {
    const inRound = matches.filter((m) => m.round === round).sort((a, b) => a.place - b.place);
    columns.push({
      round, title: roundTitle(round, rounds),
      matches: inRound.map(({ match, place }) => ({
        matchId: match.matchId, round, place,
        length: Number(match.matchLength || 0),
        state: String(match.state || "").replace("MATCH_STATE_", "").toLowerCase(),
        decision: match.decision || "", gameId: match.gameId || "",
        winner: match.winnerAccountId || "",
        seats: [seatOf(match, 0, round), seatOf(match, 1, round)],
      })),
    });
  }
  return columns;
}

/** A finish as places: "1", or "3-4" for places shared by the players out in one round. */
export function placeText(best, worst) {
  const b = Number(best || 0);
  const w = Number(worst || b);
  return w > b ? `${b}-${w}` : String(b);
}

/** The standings in place order (best place first, then the wider range, then by id). */
export function standingsInOrder(standings) {
  return [...(standings || [])].sort((a, b) =>
    Number(a.bestPlace || 0) - Number(b.bestPlace || 0)
    || Number(a.worstPlace || 0) - Number(b.worstPlace || 0)
    || String(a.accountId).localeCompare(String(b.accountId)));
}

/** Every account the bracket, seating, entrants and standings name, once each. */
export function accountsOf(tournament) {
  const ids = [
    ...(tournament.entrants || []), ...(tournament.seating || []),
    ...(tournament.bracket || []).flatMap((m) => [...(m.players || []), m.winnerAccountId]),
    ...(tournament.standings || []).map((s) => s.accountId),
  ];
  return [...new Set(ids.filter(Boolean))];
}

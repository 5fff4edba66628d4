// Package playground serves GraphiQL, the in-browser GraphQL IDE, entirely from files the
// binary embeds: the page, its start-up script, and the pinned UMD builds of graphiql, react and
// react-dom under assets/ with their licences. The page never loads anything from another
// origin, so it works on a machine without internet and leaks no traffic to a CDN.
//
// assets/ is generated: scripts/graphiql-assets rebuilds it from the npm registry using the pins
// in npm/ (package.json and its lockfile) and writes assets/manifest.json, whose file hashes a
// test checks against what is embedded. web/ holds msggate's own page and script.
package playground

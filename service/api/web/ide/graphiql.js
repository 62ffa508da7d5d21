// GraphiQL on DocQA's own endpoint. Calls need a bearer token: paste it in the Headers tab as
// {"Authorization": "Bearer <token>"} (`docqa token --user U` mints one on a laptop).
"use strict";
(function () {
  const signedIn = sessionStorage.getItem("docqa.token");
  const headers = { Authorization: "Bearer " + (signedIn || "<token from `docqa token --user U`>") };
  const fetcher = GraphiQL.createFetcher({ url: "/graphql" });
  const root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultHeaders: JSON.stringify(headers, null, 2),
      defaultEditorToolsVisibility: "headers",
      shouldPersistHeaders: false,
    })
  );
})();

"use strict";
X.ready(async () => {
  X.$("#login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = X.$("#token").value.trim();
    sessionStorage.setItem(X.TOKEN, value);
    sessionStorage.removeItem(X.ME);
    try {
      await X.call("GET", "/v1/me", { keep401: true });
    } catch (error) {
      sessionStorage.removeItem(X.TOKEN);
      X.alert(error.status === 401 ? "This credential was refused." : error);
      return;
    }
    const next = new URLSearchParams(location.search).get("next");
    location.assign(next && next.startsWith(X.ui + "/") ? next : `${X.ui}/workflows`);
  });
});

package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/offlinebox/offlinebox/auth"
)

// TestBrowserPageRefusesAMalformedTokenReadablyAndStartsADirectChatAndAGroup
// drives the page in headless Chromium: a token that is not one is named
// so, a direct conversation started from the form takes its first
// message, and a group founded there names its members and their count
// in its header (GET /v1/conversations/{conv}/members).
func TestBrowserPageRefusesAMalformedTokenReadablyAndStartsADirectChatAndAGroup(t *testing.T) {
	exe := chromium(t)
	base, cfg := startPipeline(t)
	kr, err := auth.New(auth.Config{Secret: []byte(cfg.JWTSecret)})
	if err != nil {
		t.Fatal(err)
	}
	link, err := signInLink(kr, base, "alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.ArtifactDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-gpu", true))
	actx, stop := chromedp.NewExecAllocator(context.Background(), opts...)
	defer stop()
	ctx, closeCtx := chromedp.NewContext(actx)
	defer closeCtx()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	bctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	for _, bad := range []string{"not-a-token", "a.%%%.c"} {
		step(t, bctx, "the page names a malformed token ("+bad+") as one",
			chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), bad),
			clickJS("#signin-form button"),
			untilJS(`/this is not a token/.test(document.querySelector("#signin-error").textContent)`))
	}
	shoot(t, bctx, dir, "01-malformed-token")

	step(t, bctx, "alice starts a direct conversation with bob and sends its first message",
		// From about:blank: from the page itself, a link that differs by its
		// fragment only would not load it again.
		chromedp.Navigate("about:blank"), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#new-conv")),
		chromedp.SetValue(chromedp.CSS("#new-with"), "bob"),
		clickJS("#new-conv button"),
		untilJS(`document.querySelector("#conv-title").textContent === "bob"`),
		chromedp.SendKeys(chromedp.CSS("#compose"), "first words"),
		clickJS("#composer button"),
		untilJS(`[...document.querySelectorAll("#message-list li.msg[data-seq]")].some(e => e.textContent.includes("first words"))`),
		untilJS(`!!document.querySelector('#convs li[data-conv="d-alice-bob"]')`))
	shoot(t, bctx, dir, "02-direct-started")

	step(t, bctx, "a user id alone with a second one asks for a group name",
		chromedp.SetValue(chromedp.CSS("#new-with"), "bob, carol"),
		clickJS("#new-conv button"),
		untilJS(`/give the group a name/.test(document.querySelector("#new-conv-error").textContent)`))

	step(t, bctx, "alice founds a group with bob and carol; its header names the three",
		chromedp.SetValue(chromedp.CSS("#new-with"), "bob, carol"),
		chromedp.SetValue(chromedp.CSS("#new-group"), "launch"),
		clickJS("#new-conv button"),
		untilJS(`document.querySelector("#conv-sub").textContent === "3 members: you, bob, carol"`),
		chromedp.SendKeys(chromedp.CSS("#compose"), "welcome"),
		clickJS("#composer button"),
		untilJS(`[...document.querySelectorAll("#message-list li.msg[data-seq]")].some(e => e.textContent.includes("welcome"))`),
		untilJS(`!!document.querySelector('#convs li[data-conv="g-launch"]')`))
	shoot(t, bctx, dir, "03-group-founded")
}

/* The dealer's screen (after dealer.js): sign-in back-off on the screen, and a manager lifting a lock.
   Registered with Showdown.extend("dealer", {init, render}). */
"use strict";

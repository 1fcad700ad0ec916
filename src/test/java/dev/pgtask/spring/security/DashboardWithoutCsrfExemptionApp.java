package dev.pgtask.spring.security;

import dev.pgtask.dashboard.DashboardAccess;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * {@link SecuredDashboardApp} without the exemption of the dashboard's path from Spring's CSRF
 * filter, and every action allowed: that filter then refuses the dashboard's own forms, which carry
 * the dashboard's token, not Spring's (why docs/dashboard.md tells to exempt the path).
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
class DashboardWithoutCsrfExemptionApp {

  @Bean
  SecurityFilterChain security(HttpSecurity http) throws Exception {
    http.authorizeHttpRequests(requests -> requests
            .requestMatchers("/ops/pgtask/**").hasRole("OPS")
            .anyRequest().authenticated())
        .httpBasic(Customizer.withDefaults());
    return http.build();
  }

  @Bean
  DashboardAccess dashboardAccess() {
    return DashboardAccess.READ_WRITE;
  }

  @Bean
  InMemoryUserDetailsManager users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("admin").password("{noop}" + DashboardSecurityMountTest.PASSWORD).roles("OPS", "ADMIN").build());
  }
}
